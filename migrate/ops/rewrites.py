"""The rewrites offered for ops without an NPU kernel (``op_registry/aten/rewrites.yaml``):
keyed by the ATen overload (``_linalg_det``) or another library's op (``torchvision::nms``),
each checked against this schema when the registry loads, so a typo fails the load."""

from __future__ import annotations

from migrate.core.schema import mapping, one_of, param, problems, strings

SAFETY = ("safe", "assisted")
SCHEMA = {
    "from": param(str, required=True, doc="the call that reaches the op (Python)"),
    "to": param(str, required=True, doc="the call that replaces it: ops with NPU kernels only"),
    "uses": strings(required=True, doc="the ops `to` runs, each with an NPU kernel"),
    "why": param(str, required=True, doc="why `to` has kernels where `from` has none"),
    "safety": param(
        str,
        check=one_of(*SAFETY),
        doc="safe (default): numerically the same; assisted: semantics differ (see note)",
    ),
    "note": param(str, doc="what differs from `from`, for an assisted rewrite"),
    "requires": strings(doc="modules `from` needs (torchvision): its test skips without them"),
    "inputs": mapping(param(list), required=True, doc="name -> [kind, shape(, bounds)]"),
    "atol": param(float, required=True, doc="tolerance of the numerical check"),
}


class RewriteError(ValueError):
    """rewrites.yaml breaks its schema."""


def checked(data: dict, name: str = "rewrites.yaml") -> dict[str, dict]:
    """``data`` (the file ``name``'s mapping), once every entry passes the schema."""
    for op, entry in data.items():
        if not isinstance(entry, dict):
            raise RewriteError(f"{name} {op}: not a mapping")
        why = problems(SCHEMA, entry, f"{name} {op}", "key")
        if why is None and entry.get("safety") == "assisted" and not entry.get("note"):
            why = f"{name} {op}: an assisted rewrite needs a note (what differs)"
        if why is not None:
            raise RewriteError(why)
    return data


def offered(rewrites: dict[str, dict], op: str) -> dict | None:
    """The rewrite offered for the census row of ``op`` (``aten::x`` or ``lib::x``), as the
    report shows it (docs/contracts.md §4)."""
    entry = rewrites.get(op) or (rewrites.get(op.split("::", 1)[-1]) if op.startswith("aten::") else None)
    if entry is None:
        return None
    shown = {k: entry[k] for k in ("from", "to", "why")}
    shown["safety"] = entry.get("safety", "safe")
    if entry.get("note"):
        shown["note"] = entry["note"]
    return shown
