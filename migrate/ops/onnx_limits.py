"""ATC's documented and plugin-coded limits (op_registry/onnx/atc/limits.yaml), applied to a
node: a broken limit is a ``restricted`` verdict with the reason and its source.

Both the census (onnx protos) and decompose (onnx_ir nodes) judge through :class:`NodeView`,
so one table drives both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from migrate.core.resources import op_registry_dir
from migrate.ops.registry import RESTRICTED, Verdict, load_yaml

KINDS = (
    "attribute",
    "attribute_length",
    "attribute_min",
    "attribute_odd",
    "output_unused",
    "max_inputs",
    "max_outputs",
    "input_dtype",
    "input_rank",
    "constant_input",
)
_FIELDS = {
    "check",
    "why",
    "note",
    "source",
    "when_rank",
    "attribute",
    "allowed",
    "forbidden",
    "default",
    "min",
    "max",
    "output",
    "input",
    "inputs",
    "compare",
}
# How an attribute value is compared with the allowed ones (``compare:`` in limits.yaml).
COMPARE = ("exact", "einsum")


@dataclass(frozen=True)
class Limit:
    op: str
    check: str
    why: str
    source: str
    params: dict = field(default_factory=dict)
    when_rank: int | None = None


@dataclass
class NodeView:
    """What a limit looks at: attributes, and per input (elem type name, rank, constant?)."""

    op_type: str
    domain: str
    attrs: dict
    inputs: list[tuple[str | None, int | None, bool] | None]
    outputs: list[str]

    @property
    def key(self) -> str:
        return self.op_type if self.domain in ("", "ai.onnx") else f"{self.domain}::{self.op_type}"


def _plugin_source(op: str, note: str, ops: dict) -> str:
    files = (ops.get(op) or {}).get("source") or []
    where = files[0] if files else "ops.yaml"
    return f"{where} ({note})"


def parse(data: dict, ops: dict) -> dict[str, list[Limit]]:
    """Typed limits from the YAML; a bad entry fails naming the op and the field."""
    out: dict[str, list[Limit]] = {}
    for op, checks in (data.get("checks") or {}).items():
        for raw in checks:
            unknown = set(raw) - _FIELDS
            if raw.get("check") not in KINDS or unknown or not raw.get("why"):
                raise ValueError(
                    f"limits.yaml: {op}: bad check {raw} (kinds: {', '.join(KINDS)}; "
                    f"unknown fields: {sorted(unknown)})"
                )
            if not raw.get("note") and not raw.get("source"):
                raise ValueError(f"limits.yaml: {op}: a check needs a note or a source")
            if raw.get("compare", "exact") not in COMPARE:
                raise ValueError(f"limits.yaml: {op}: compare must be one of {', '.join(COMPARE)}")
            source = raw.get("source") or _plugin_source(op, raw["note"], ops)
            params = {
                k: v for k, v in raw.items() if k not in ("check", "why", "note", "source", "when_rank")
            }
            out.setdefault(op, []).append(
                Limit(op, raw["check"], raw["why"], source, params, raw.get("when_rank"))
            )
    return out


@cache
def limits() -> dict[str, list[Limit]]:
    from migrate.ops.registry import load_onnx

    data = load_yaml(op_registry_dir() / "onnx" / "atc" / "limits.yaml")
    return parse(data, load_onnx("atc").ops)


def _norm(value):
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return value.replace(" ", "") if isinstance(value, str) else value


def _broken(limit: Limit, node: NodeView) -> str | None:
    """The offending value as text when ``node`` breaks ``limit``; None when it keeps it."""
    p = limit.params
    kind = limit.check
    if kind.startswith("attribute"):
        value = _norm(node.attrs.get(p["attribute"], p.get("default")))
        if value is None:
            return None
        if kind == "attribute":
            allowed, forbidden = p.get("allowed"), p.get("forbidden") or []
            seen = value
            if p.get("compare") == "einsum":
                seen = einsum_canonical(value)
                allowed = [einsum_canonical(a) for a in allowed or ()]
            bad = seen in forbidden or (allowed is not None and seen not in allowed)
        elif kind == "attribute_length":
            bad = len(value) not in p["allowed"]
            value = f"{value} (length {len(value)})"
        elif kind == "attribute_min":
            bad = value < p["min"]
        else:  # attribute_odd
            bad = value % 2 == 0
        return f"{p['attribute']}={value!r}" if bad else None
    if kind == "output_unused":
        i = p["output"]
        return (
            f"output {i} ({node.outputs[i]}) is used" if len(node.outputs) > i and node.outputs[i] else None
        )
    if kind in ("max_inputs", "max_outputs"):
        items = node.inputs if kind == "max_inputs" else node.outputs
        n = sum(1 for x in items if x)
        return f"{n} {kind[4:]}" if n > p["max"] else None
    return _broken_input(limit, node)


def einsum_canonical(equation: str) -> str:
    """An einsum equation with its letters renamed in order of first appearance and the
    implicit output made explicit: ``ij,kj->ik`` and ``ab,cb->ac`` are one equation."""
    eq = equation.replace(" ", "")
    if "->" not in eq:
        letters = eq.replace(",", "")
        eq += "->" + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c.isalpha()))
    names: dict[str, str] = {}
    out = []
    for c in eq:
        if c.isalpha():
            c = names.setdefault(c, chr(ord("a") + len(names)) if len(names) < 26 else c)
        out.append(c)
    return "".join(out)


def _broken_input(limit: Limit, node: NodeView) -> str | None:
    p = limit.params
    indices = p.get("inputs") or [p["input"]]
    for i in indices:
        info = node.inputs[i] if i < len(node.inputs) else None
        if info is None:
            continue
        dtype, rank, const = info
        if limit.check == "input_dtype" and dtype and dtype not in p["allowed"]:
            return f"input {i} is {dtype}"
        if limit.check == "input_rank" and rank is not None and rank not in p["allowed"]:
            return f"input {i} has rank {rank}"
        if limit.check == "constant_input" and not const:
            return f"input {i} is computed in the graph"
    return None


def check(node: NodeView) -> Verdict | None:
    """The first limit ``node`` breaks, as a ``restricted`` verdict; None if it keeps all."""
    rank = node.inputs[0][1] if node.inputs and node.inputs[0] else None
    for limit in limits().get(node.key, ()):
        if limit.when_rank is not None and rank != limit.when_rank:
            continue
        value = _broken(limit, node)
        if value is not None:
            return Verdict(RESTRICTED, f"{value}: {limit.why} (source: {limit.source})")
    return None
