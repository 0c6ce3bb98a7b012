"""Run a model under dispatch-level capture and collect per-overload verdicts.

Three layers, so that ops torch_npu runs itself are not misreported:

* A TorchFunctionMode sees calls *before* CompositeImplicitAutograd decomposition
  (``torch.matmul``, ``F.scaled_dot_product_attention``, ``_VF.lstm``). When torch_npu has
  a kernel for that composite op, the op is reported and the ops it decomposes into on the
  CPU are not.
* A TorchDispatchMode sees every ATen overload that reaches a kernel, with the module path
  that dispatched it (forward hooks; in backward, the forward module whose autograd node
  is running) and, for ops that are not plainly supported, the user's ``file:line``.
* An overload without an NPU kernel is judged by what serves the NPU's key (judge.py):
  a composite kernel is re-run at its key under a nested capture that only judges, with a
  guard against re-entering an op already being descended into.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from migrate.ops.aten import where
from migrate.ops.aten.judge import COMPOSITE_REASON, Judge, from_children
from migrate.ops.registry import SUPPORTED, Verdict

MAX_LOCATIONS = 5


class CaptureError(RuntimeError):
    """An internal failure of the capture (not of the user's model)."""


@dataclass
class Census:
    """Rows keyed by (op, status); module paths and locations in first-seen order."""

    rows: dict[tuple[str, str], dict] = field(default_factory=dict)
    warnings: dict[str, dict] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    stack: list[str] = field(default_factory=list)
    phase: str = "forward"
    suppress: int = 0
    locate_all: bool = False  # train mode: every forward op's location tags its backward

    def origin(self) -> tuple[str, str | None, str] | None:
        """(module, location) fixed by where the op runs: inside autograd's backward (in any
        phase: a training wrapper's forward may call backward itself) the forward op's
        origin; in the optimizer step ``<optimizer>``."""
        back = where.current_backward_origin()
        if back is not None:
            return (*back, "backward")
        if self.phase == "optimizer":
            return ("<optimizer>", None, "optimizer")
        return None

    @property
    def module(self) -> str:
        return self.stack[-1] if self.stack else "<root>"

    def add(self, op: str, verdict: Verdict, dtype: str | None, path: str,
            location: str | None, note: str | None = None, phase: str | None = None) -> None:
        key = (op, verdict.status)
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = {"op": op, "domain": "aten", "count": 0, "nodes": [],
                                    "status": verdict.status, "reason": verdict.reason,
                                    "decomposition": None, "dtypes": [], "phases": []}
            if verdict.status != SUPPORTED:
                row["locations"] = []
        row["count"] += 1
        _append(row["nodes"], path)
        _append(row["phases"], phase or self.phase)
        if dtype:
            _append(row["dtypes"], dtype)
        if note:
            _append(row.setdefault("notes", []), note)
        if location and "locations" in row and len(row["locations"]) < MAX_LOCATIONS:
            _append(row["locations"], location)

    def warn(self, op: str, kind: str, why: str, path: str, location: str | None) -> None:
        entry = self.warnings.setdefault(op, {"op": op, "kind": kind, "why": why, "count": 0,
                                              "nodes": [], "locations": []})
        entry["count"] += 1
        _append(entry["nodes"], path)
        if location and len(entry["locations"]) < MAX_LOCATIONS:
            _append(entry["locations"], location)


def _append(items: list, value) -> None:
    if value not in items:
        items.append(value)


def _dtype(args) -> str | None:
    import torch

    for a in args:
        if isinstance(a, torch.Tensor):
            return str(a.dtype).replace("torch.", "")
        if isinstance(a, (list, tuple)):
            found = _dtype(a)
            if found:
                return found
    return None


def _fname(func, forwards: dict[str, str]) -> str:
    """The ATen name a torch-function call stands for: C-implemented functions and methods
    by name; Python-level ones only when listed as direct forwards (notes.yaml)."""
    import types

    name = getattr(func, "__name__", "") or ""
    if isinstance(func, types.FunctionType):
        return forwards.get(name, "")
    return name


def _host_sync(judge: Judge, name: str, args) -> tuple[str, str] | None:
    """(kind, why) when the op makes the host wait or gives a data-dependent shape."""
    import torch

    key = name.split("::", 1)[-1]
    key = key[: -len(".default")] if key.endswith(".default") else key
    notes = judge.reg.host_sync
    why = notes.get(key) or notes.get(key.split(".", 1)[0])
    if why:
        return "host-sync", why
    mask = judge.reg.bool_mask_index
    if key in (mask.get("ops") or ()) and len(args) > 1 and isinstance(args[1], (list, tuple)):
        if any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1]):
            return "host-sync", mask["why"]
    return None


MAX_DEPTH = 8  # nested composite descents; deeper ones are judged by the kernel alone


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:200]}" if text else type(exc).__name__


def make_modes(census: Census, judge: Judge):
    """(TorchFunctionMode class, TorchDispatchMode instance factory) bound to ``census``."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    from migrate.ops.aten.judge import COMPOSITE_KEYS

    forwards = judge.reg.python_forwards
    keys = {k: getattr(torch._C.DispatchKey, k) for k in COMPOSITE_KEYS}
    pending: list = []  # (outputs, origin) of the last op, tagged once autograd wrapped them

    def flush() -> None:
        while pending:
            outs, origin = pending.pop()
            where.tag_outputs(outs if isinstance(outs, (list, tuple)) else (outs,), origin)

    def known(name: str) -> Verdict | None:
        verdict = judge.cache.get(name)
        if verdict is None and name not in judge.descend:
            verdict = judge.direct(name)
            if verdict is not None:
                judge.cache[name] = verdict
        return verdict

    class Descent(TorchDispatchMode):
        """Judges, without recording, what a composite kernel calls."""

        def __init__(self, chain: tuple[str, ...]):
            super().__init__()
            self.chain, self.seen = chain, []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = func.name()
            verdict = known(name)
            if verdict is None and name in self.chain:
                return func(*args, **kwargs)  # the kernel re-enters itself (detach -> detach)
            if verdict is None:
                verdict, out = descend(func, name, args, kwargs, self.chain + (name,))
            else:
                out = func(*args, **kwargs)
            self.seen.append((judge.alias(name), verdict))
            return out

    def descend(func, name, args, kwargs, chain) -> tuple[Verdict, object]:
        key = judge.descend[name]
        if len(chain) > MAX_DEPTH:
            census.errors.append(f"{name}: composites nested deeper than {MAX_DEPTH} "
                                 f"({' -> '.join(chain)}); judged by torch's {key} kernel alone")
            verdict = Verdict(SUPPORTED, f"torch's {key} kernel serves the NPU (nested too deep "
                                         "to check what it calls)")
            judge.cache[name] = verdict
            return verdict, func(*args, **kwargs)
        mode = Descent(chain)
        try:
            with mode:
                out = func._op_dk(keys[key], *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - reported below, never swallowed
            if mode.seen:
                raise CaptureError(f"re-running {name} at {key} failed after it had called "
                                   f"{len(mode.seen)} ops ({_first_line(exc)})") from exc
            census.errors.append(f"{name}: could not re-run torch's {key} kernel to judge what "
                                 f"it calls ({_first_line(exc)}); judged by the kernel alone")
            verdict = Verdict(SUPPORTED, f"torch's {key} kernel serves the NPU (what it calls "
                                         "could not be checked: see errors)")
            judge.cache[name] = verdict
            return verdict, func(*args, **kwargs)
        verdict = from_children(name, key, mode.seen)
        judge.cache[name] = verdict
        return verdict, out

    class FunctionMode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            op = None if census.suppress else judge.composite(_fname(func, forwards))
            if op is None:
                return func(*args, **kwargs)
            flush()
            path = census.module
            location = where.user_location(2) if census.locate_all else None
            census.add(op, Verdict(SUPPORTED, COMPOSITE_REASON), _dtype(args), path, None)
            census.suppress += 1
            try:
                out = func(*args, **kwargs)
            finally:
                census.suppress -= 1
            if torch.is_grad_enabled():
                pending.append((out, (path, location)))
                flush()
            return out

    class DispatchMode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if census.suppress:
                return func(*args, **kwargs)
            flush()
            name = func.name()
            if name.startswith("profiler::"):  # record_function markers, not computation
                return func(*args, **kwargs)
            verdict = known(name)
            if verdict is None:
                verdict, out = descend(func, name, args, kwargs, (name,))
            else:
                out = func(*args, **kwargs)
            sync = _host_sync(judge, name, args)
            origin = census.origin()
            path = origin[0] if origin else census.module
            if origin:
                location = origin[1]
            elif census.locate_all or sync or verdict.status != SUPPORTED:
                location = where.user_location(2)
            else:
                location = None
            dtype = _dtype(args)
            census.add(judge.alias(name), verdict, dtype, path, location,
                       judge.reg.weak_dtypes.get(dtype), origin[2] if origin else None)
            if sync and census.phase != "optimizer":  # optimizers keep `step` on the host
                census.warn(judge.alias(name), sync[0], sync[1], path, location)
            if census.phase in ("forward", "loss") and not origin and torch.is_grad_enabled():
                pending.append((out, (path, location)))  # no autograd nodes under no_grad
            return out

    return FunctionMode, DispatchMode, flush


def module_hooks(model, census: Census, flush) -> list:
    handles = []
    for name, module in model.named_modules():
        path = name or "<root>"

        def pre(_m, _a, path=path):
            flush()
            census.stack.append(path)

        def post(_m, _a, _o):
            flush()
            if census.stack:
                census.stack.pop()

        handles.append(module.register_forward_pre_hook(pre))
        handles.append(module.register_forward_hook(post))
    return handles
