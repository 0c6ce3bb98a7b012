"""The census rows of an ATen capture: per (op, status), with module paths, phases, dtypes,
user locations, and the host-sync warnings; plus the small readers of an op's arguments."""

from __future__ import annotations

from dataclasses import dataclass, field

from migrate.core import threads
from migrate.ops.aten import where
from migrate.ops.aten.judge import Judge
from migrate.ops.registry import SUPPORTED, Verdict

MAX_LOCATIONS = 5


@dataclass
class Census:
    """Rows keyed by (op, status, torch_npu's sparse key or None); module paths and locations
    in first-seen order."""

    rows: dict[tuple[str, str, str | None], dict] = field(default_factory=dict)
    warnings: dict[str, dict] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    phase: str = "forward"
    locate_all: bool = False  # train mode: every forward op's location tags its backward
    local: threads.PerThread = field(default_factory=threads.PerThread)

    @property
    def stack(self) -> list[str]:
        """The current thread's module paths (a worker thread runs its own forward)."""
        return self.local.stack

    @property
    def suppress(self) -> int:
        return self.local.suppress

    @suppress.setter
    def suppress(self, value: int) -> None:
        self.local.suppress = value

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

    def add(
        self,
        op: str,
        verdict: Verdict,
        dtype: str | None,
        path: str,
        location: str | None,
        note: str | None = None,
        phase: str | None = None,
        calls: int = 1,
        sparse: str | None = None,
        via: str | None = None,
    ) -> None:
        """One call of ``op`` (``calls=0``: a phase of a call already counted, such as the
        backward of a fused op); ``sparse``: the call was on sparse tensors, judged at that
        key of torch_npu (SparseNPU, SparseCsrNPU)."""
        key = (op, verdict.status, sparse)
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = {**verdict.row(op, "aten"), "phases": []}
            if sparse:
                row["sparse_key"] = sparse
            if verdict.status != SUPPORTED:
                row["locations"] = []
        row["count"] += calls
        thread = self.local.attributed()
        if thread is not None:
            _append(row.setdefault("threads", []), thread)
        _append(row["nodes"], path)
        _append(row["phases"], phase or self.phase)
        if dtype:
            _append(row["dtypes"], dtype)
        if note:
            _append(row.setdefault("notes", []), note)
        if location and "locations" in row and len(row["locations"]) < MAX_LOCATIONS:
            _append(row["locations"], location)
        if via and "locations" in row and len(row.get("via", ())) < MAX_LOCATIONS:
            _append(row.setdefault("via", []), via)  # the library line inside that call

    def warn(self, op: str, kind: str, why: str, path: str, location: str | None) -> None:
        entry = self.warnings.setdefault(
            op, {"op": op, "kind": kind, "why": why, "count": 0, "nodes": [], "locations": []}
        )
        entry["count"] += 1
        thread = self.local.attributed()
        if thread is not None:
            _append(entry.setdefault("threads", []), thread)
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
    """(kind, why) when the op makes the host wait or gives a data-dependent shape: by the
    overload (``where.default``), by the op (``nonzero``), or boolean-mask indexing."""
    import torch

    key = name.split("::", 1)[-1]
    overload = key if "." in key else f"{key}.default"
    key = key[: -len(".default")] if key.endswith(".default") else key
    notes = judge.reg.host_sync
    why = notes.get(overload) or notes.get(key.split(".", 1)[0])
    if why:
        return "host-sync", why
    mask = judge.reg.bool_mask_index
    if key in (mask.get("ops") or ()) and len(args) > 1 and isinstance(args[1], (list, tuple)):
        if any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1]):
            return "host-sync", mask["why"]
    return None
