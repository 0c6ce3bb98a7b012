"""The hooks of one replay pass and the evidence they collect, in execution order.

``Replayer.pre`` runs before a module: it first judges the live tensors the *calling*
module hands to it against the reference's inputs of that call (the caller's own code
made them from reference inputs), then swaps them for the reference's. ``post`` judges
the module's outputs. With ``apis``, a TorchFunctionMode judges every torch function's
output inside the innermost running module against the reference's ``api.output`` record
of the same name and call number (naming the failing call's ``file:line``).

``events`` holds ``((module, call), entries)`` in execution order: the owner is the module
the evidence blames.
"""

from __future__ import annotations

from collections import defaultdict
from contextlib import contextmanager, nullcontext
from typing import Any

from migrate.core.callsite import code_location
from migrate.precision.flatten import iter_tensors, substitute
from migrate.precision.judge import compare_records
from migrate.precision.manifest import Dump
from migrate.precision.result import missing_entry
from migrate.precision.runner import saturating_cast
from migrate.precision.thresholds import Gate

Key = tuple[str, int]


def group(records: list[dict]) -> tuple[dict, dict, dict, list]:
    """Reference records by (name, call): inputs, outputs, api outputs; output order."""
    inputs, outputs, apis, order = defaultdict(list), defaultdict(list), defaultdict(list), []
    for rec in records:
        k = (rec["name"], rec["call"])
        if rec["kind"] == "forward.input":
            inputs[k].append(rec)
        elif rec["kind"] == "forward.output":
            if k not in outputs:
                order.append(k)
            outputs[k].append(rec)
        elif rec["kind"] == "api.output":
            apis[k].append(rec)
    for recs in (*inputs.values(), *apis.values()):
        recs.sort(key=lambda r: r["index"])
    return inputs, outputs, apis, order


class Replayer:
    def __init__(self, ref: Dump, gate: Gate, run_class: str | None, apis: bool = False) -> None:
        self.ref, self.gate, self.run_class, self.apis = ref, gate, run_class, apis
        self.inputs, self.outputs, self.api_recs, self.order = group(ref.records)
        self.calls: dict[str, int] = defaultdict(int)
        self.stack: dict[str, list[int]] = defaultdict(list)
        self.active: list[Key] = []  # running modules, innermost last
        self.events: list[tuple[Key, list[dict]]] = []
        # the tensors of failing outputs (id of the entry: reference, replayed, thresholds),
        # for judging again after a flipped discrete decision (discrete.py)
        self.failed: dict[int, tuple[Any, Any, dict]] = {}
        self.forced: dict[Key, str] = {}  # (name, call) -> "" or why not replayed
        self.handoffs = self.api_checks = 0
        self.busy = False  # our own torch work inside hooks is not an API call
        self._api_recorder: Any = None

    # -- module hooks --------------------------------------------------------------------
    def pre(self, name: str, args: tuple, kwargs: dict) -> tuple | None:
        self.busy = True
        try:
            return self._pre(name, args, kwargs)
        finally:
            self.busy = False

    def _pre(self, name: str, args: tuple, kwargs: dict) -> tuple | None:
        call = self.calls[name]
        self.calls[name] += 1
        self.stack[name].append(call)
        caller = self.active[-1] if self.active else None
        self.active.append((name, call))
        if self._api_recorder is not None:
            self._api_recorder.enter(name)
        live = [t for _, t in iter_tensors({"args": args, "kwargs": kwargs})]
        recs = self.inputs.get((name, call), [])
        why = ""
        if not recs and live:
            why = "no recorded inputs"
        elif len(recs) != len(live):
            why = f"{len(live)} input tensors, the reference recorded {len(recs)}"
        elif any(list(t.shape) != r["shape"] for t, r in zip(live, recs, strict=True)):
            why = "input shapes differ from the reference's"
        self.forced[(name, call)] = why
        if why or not live:
            return None
        if caller is not None and not self.forced.get(caller):
            self._handoff(caller, f"{name}#{call}", live, recs)
        # copies: the model may modify its inputs in place, and a shard's tensors are
        # shared by every read of that shard
        new = [
            saturating_cast(self.ref.stored(r).to(device=t.device, copy=True), t.dtype)
            for t, r in zip(live, recs, strict=True)
        ]
        call_args = substitute({"args": args, "kwargs": kwargs}, iter(new))
        return tuple(call_args["args"]), dict(call_args["kwargs"])

    def _handoff(self, caller: Key, child: str, live: list, recs: list[dict]) -> None:
        """Judge what the caller's own code hands to ``child`` (before the swap)."""
        entries = []
        for t, rec in zip(live, recs, strict=True):
            entry = self._judge(caller[0], rec, t)
            entry.update(
                name=caller[0], call=caller[1], kind="forward.child_input", child=child, replayed=True
            )
            if entry["status"] == "fail":
                entry["reason"] = f"input {rec['index']} of {child}: {entry['reason']}"
            entries.append(entry)
        self.handoffs += len(entries)
        self.events.append((caller, entries))

    def post(self, name: str, output: Any) -> None:
        self.busy = True
        try:
            self._post(name, output)
        finally:
            self.busy = False

    def _post(self, name: str, output: Any) -> None:
        stack = self.stack[name]
        call = stack.pop() if stack else self.calls[name] - 1
        if self.active and self.active[-1] == (name, call):
            self.active.pop()
        if self._api_recorder is not None:
            self._api_recorder.leave(name)
        outs = [t for _, t in iter_tensors(output)]
        entries = []
        for rec in self.outputs.get((name, call), []):
            if rec["index"] >= len(outs):
                entries.append(missing_entry(rec, "replay"))
                continue
            entry = self._judge(name, rec, outs[rec["index"]])
            entry["replayed"] = not self.forced.get((name, call))
            if not entry["replayed"]:
                entry["reason"] = (
                    entry["reason"] + "; " if entry["reason"] else ""
                ) + f"not replayed: {self.forced[(name, call)]}"
            entries.append(entry)
        self.events.append(((name, call), entries))

    def _judge(self, name: str, rec: dict, t: Any) -> dict:
        t = t.detach()
        got = {**rec, "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
        th = self.gate.for_entry(name, rec["dtype"], got["dtype"], self.run_class, replay=True)
        ref, mine = self.ref.tensor(rec), t.cpu()
        entry = compare_records(rec, got, ref, mine, th)
        if entry["status"] == "fail" and ref is not None:
            self.failed[id(entry)] = (ref, mine, th)
        return entry

    # -- torch function calls (--apis) ----------------------------------------------------
    def api_mode(self):
        """A context that judges API outputs while the model runs (nothing without apis)."""
        if not self.apis:
            return nullcontext()
        return self._api_mode()

    @contextmanager
    def _api_mode(self):
        from migrate.precision.api_hooks import ApiRecorder

        self._api_recorder = ApiRecorder(self)
        try:
            with self._api_recorder:
                yield
        finally:
            self._api_recorder = None

    def _record_all(self, name: str, call: int, kind: str, obj: Any) -> None:
        """ApiRecorder's callback: ``name`` is ``module/function``."""
        self.busy = True
        try:
            recs = self.api_recs.get((name, call), [])
            outs = [t for _, t in iter_tensors(obj)]
            module = name.partition("/")[0]
            owner = next((k for k in reversed(self.active) if k[0] == module), None)
            if owner is None or self.forced.get(owner) or not recs:
                return
            entries = []
            for rec in recs:
                if rec["index"] < len(outs):
                    entries.append(
                        {**self._judge(module, rec, outs[rec["index"]]), "name": name, "replayed": True}
                    )
            if any(e["status"] == "fail" for e in entries):
                where = code_location(2)
                for e in entries:
                    e["location"] = where
            self.api_checks += len(entries)
            self.events.append((owner, entries))
        finally:
            self.busy = False
