"""Replay at the reference's precision: a module's own code judged without the target's
rounding.

A bf16 target cannot show an error of its own code smaller than bf16's rounding: a
rotary embedding's cosine term scaled by 1.25 moves Llama's attention output by 0.27 %,
below one bf16 rounding (0.39 %). So when the target's parameters are of a lower precision
than the reference's and the replay at the target's precision names no culprit, the
target model is lifted to the reference's dtype (in place, every floating parameter and
buffer restored to its dtype afterwards: bf16 values are exact in float32) and replayed
once more with

* every module's inputs the reference's (as in replay), and
* every module's outputs replaced by the reference's once judged,

so each module's own code - the functional calls between its children - runs on the
reference's values only. What it hands to a child, and its output, must then match the
reference at the reference's precision: the code of the port, not the dtype, differs.

Evidence is judged only where it cannot carry the target's rounding: the module's own
code read no floating parameter or buffer (those hold the target's rounded values; a
Linear's weight) nor any tensor still in a lower precision, and every child output so far
could be replaced. The rest was judged by the first pass.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from migrate.precision.flatten import iter_tensors, substitute
from migrate.precision.replay_events import Key, Replayer
from migrate.precision.result import missing_entry
from migrate.precision.runner import saturating_cast

_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}


def lift_dtype(model: Any, ref_meta: dict) -> Any:
    """The torch dtype to lift ``model`` to (the reference's parameter dtype), or None
    when no floating parameter of the model is of a lower precision."""
    import torch

    ref = str((ref_meta.get("precision") or {}).get("param_dtype") or "")
    if _BITS.get(ref, 0) < 32:
        return None
    low = {
        str(p.dtype).removeprefix("torch.")
        for p in model.parameters()
        if p.is_floating_point() and _BITS.get(str(p.dtype).removeprefix("torch."), 64) < _BITS[ref]
    }
    return getattr(torch, ref) if low else None


def _lower(t: Any, dtype: Any) -> bool:
    return bool(t.is_floating_point()) and t.dtype.itemsize < dtype.itemsize


@contextmanager
def lifted(model: Any, dtype: Any):
    """``model`` with every lower-precision floating parameter and buffer in ``dtype``
    (parameters keep their identity: tied weights stay tied), restored afterwards."""
    import torch

    params: list[tuple[Any, Any]] = []
    buffers: list[tuple[Any, str, Any]] = []
    done: set[int] = set()
    with torch.no_grad():
        try:
            for module in model.modules():
                for p in module._parameters.values():
                    if p is not None and _lower(p, dtype) and id(p) not in done:
                        done.add(id(p))
                        params.append((p, p.dtype))
                        p.data = p.data.to(dtype)
                for key, buf in list(module._buffers.items()):
                    if buf is not None and _lower(buf, dtype):
                        buffers.append((module, key, buf.dtype))
                        module._buffers[key] = buf.to(dtype)
            yield
        finally:
            for p, old in params:
                p.data = p.data.to(old)
            for module, key, old in buffers:
                buf = module._buffers.get(key)
                if buf is not None:
                    module._buffers[key] = saturating_cast(buf, old)


def lift_call(obj: Any, dtype: Any) -> Any:
    """``obj`` (a call's args/kwargs) with lower-precision floating tensors in ``dtype``."""
    return substitute(obj, iter(t.to(dtype) if _lower(t, dtype) else t for _, t in iter_tensors(obj)))


class ExactReplayer(Replayer):
    """Replayer whose modules also get the reference's outputs of their children, and
    which judges only evidence made by own code from reference values alone."""

    def __init__(self, *args: Any, state: set[int], dtype: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state, self.dtype = state, dtype
        self.inexact: dict[Key, str] = {}  # module calls whose own code saw rounded values
        self.skipped = 0

    def _rounded(self, t: Any) -> bool:
        """A parameter or buffer (the target's rounded values), or a lower-precision tensor."""
        return bool(t.is_floating_point()) and (id(t) in self.state or _lower(t, self.dtype))

    def _handoff(self, caller: Key, child: str, live: list, recs: list[dict]) -> None:
        if caller in self.inexact:
            self.skipped += len(live)
            return
        # a parameter handed on as it is (DeBERTa's relative embeddings, a weight-norm
        # parametrization's original) holds the target's rounding, not the caller's code
        kept = [(t, r) for t, r in zip(live, recs, strict=True) if not self._rounded(t)]
        self.skipped += len(live) - len(kept)
        if not kept:
            return
        live, recs = [t for t, _ in kept], [r for _, r in kept]
        before = len(self.events)
        super()._handoff(caller, child, live, recs)
        for _, entries in self.events[before:]:
            for e in entries:
                e["exact"] = True

    def post(self, name: str, output: Any) -> Any:
        self.busy = True
        try:
            return self._post_exact(name, output)
        finally:
            self.busy = False

    def _post_exact(self, name: str, output: Any) -> Any:
        stack = self.stack[name]
        call = stack.pop() if stack else self.calls[name] - 1
        key = (name, call)
        if self.active and self.active[-1] == key:
            self.active.pop()
        caller = self.active[-1] if self.active else None
        live = [t for _, t in iter_tensors(output)]
        recs = self.outputs.get(key, [])
        if self.forced.get(key) or key in self.inexact:
            self.skipped += len(recs)
        else:
            entries = []
            for rec in recs:
                if rec["index"] >= len(live):
                    entries.append(missing_entry(rec, "replay"))
                    continue
                if self._rounded(live[rec["index"]]):
                    self.skipped += 1
                    continue
                entry = self._judge(name, rec, live[rec["index"]])
                entry.update(replayed=True, exact=True)
                entries.append(entry)
            self.events.append((key, entries))
        if len(recs) != len(live) or any(
            list(t.shape) != r["shape"] or r["index"] != i
            for i, (t, r) in enumerate(zip(live, sorted(recs, key=lambda r: r["index"]), strict=False))
        ):
            if caller is not None:
                self.inexact.setdefault(caller, f"the outputs of {name}#{call} could not be replaced")
            return None
        new = [
            saturating_cast(self.ref.stored(r).to(device=t.device, copy=True), t.dtype)
            for t, r in zip(live, sorted(recs, key=lambda r: r["index"]), strict=True)
        ]
        return substitute(output, iter(new))

    def note_read(self, args: tuple, kwargs: dict | None) -> None:
        """A torch call of the innermost running module's own code: does it read state
        (a floating parameter or buffer) or a value still in a lower precision?"""
        if self.busy or not self.active or self.active[-1] in self.inexact:
            return
        for _, t in iter_tensors({"args": args, "kwargs": kwargs or {}}):
            if self._rounded(t):
                what = "a parameter or buffer" if id(t) in self.state else f"a {t.dtype} tensor"
                self.inexact[self.active[-1]] = f"its own code reads {what}"
                return


@contextmanager
def watching(rp: ExactReplayer):
    """A TorchFunctionMode telling ``rp`` what each module's own code reads."""
    import torch

    class _Reads(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            rp.note_read(args, kwargs)
            return func(*args, **(kwargs or {}))

    with _Reads():
        yield
