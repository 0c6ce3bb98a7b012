"""ATC's documented and plugin-coded limits (op_registry/onnx/atc/limits.yaml), applied to a
node: a broken limit is a ``restricted`` verdict with the reason and its source.

Both the census (onnx protos) and decompose (onnx_ir nodes) judge through :class:`NodeView`,
so one table drives both.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from migrate.core.resources import op_registry_dir
from migrate.ops.registry import RESTRICTED, Verdict, load_yaml

LIMITS_FILE = "onnx/atc/limits.yaml"  # under op_registry/


@dataclass(frozen=True)
class CheckKind:
    """The keys a check of one kind takes (besides ``check``, ``why``, ``note``/``source``
    and ``when_rank``, which every check may have)."""

    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()  # at least one of these


# The check registry: every kind _broken judges, with its keys.
CHECKS: dict[str, CheckKind] = {
    "attribute": CheckKind(("attribute",), ("default", "compare"), ("allowed", "forbidden")),
    "attribute_length": CheckKind(("attribute", "allowed"), ("default",)),
    "attribute_min": CheckKind(("attribute", "min"), ("default",)),
    "attribute_odd": CheckKind(("attribute",), ("default",)),
    "output_unused": CheckKind(("output",)),
    "max_inputs": CheckKind(("max",)),
    "max_outputs": CheckKind(("max",)),
    "input_dtype": CheckKind(("allowed",), any_of=("input", "inputs")),
    "input_rank": CheckKind(("allowed",), any_of=("input", "inputs")),
    "constant_input": CheckKind(any_of=("input", "inputs")),
}
KINDS = tuple(CHECKS)
_COMMON = ("check", "why", "note", "source", "when_rank")
_TYPES: dict[str, type | tuple[type, ...]] = {
    "why": str,
    "note": str,
    "source": str,
    "when_rank": int,
    "attribute": str,
    "allowed": list,
    "forbidden": list,
    "min": (int, float),
    "max": int,
    "output": int,
    "input": int,
    "inputs": list,
    "compare": str,
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


class LimitsError(ValueError):
    """A check of limits.yaml the engine cannot use: names the file, the op and the key."""


def _unknown(where: str, what: str, value: object, known: Sequence[str], listed: str) -> LimitsError:
    """The error for a name not among ``known``: the closest one, else all of them."""
    hint = difflib.get_close_matches(str(value), known, 1)
    return LimitsError(
        f"{where}: unknown {what} {value!r}"
        + (f" (did you mean {hint[0]!r}?)" if hint else f" ({listed}: {', '.join(known)})")
    )


def _check_keys(where: str, raw: dict) -> CheckKind:
    """The kind of check ``raw``, its keys checked against :data:`CHECKS`."""
    kind = raw.get("check")
    if kind not in CHECKS:
        raise _unknown(where, "check", kind, KINDS, "known")
    spec = CHECKS[kind]
    where = f"{where}: check {kind}"
    known = (*_COMMON, *spec.required, *spec.optional, *spec.any_of)
    for key in raw:
        if key not in known:
            raise _unknown(where, "key", key, known, "keys")
        value = raw[key]
        if key in _TYPES and (isinstance(value, bool) or not isinstance(value, _TYPES[key])):
            raise LimitsError(f"{where}: {key} must be of type {_type_name(key)}, not {value!r}")
    missing = [k for k in spec.required if k not in raw]
    if spec.any_of and not any(k in raw for k in spec.any_of):
        missing.append(" or ".join(spec.any_of))
    if not raw.get("why"):
        missing.append("why")
    if not raw.get("note") and not raw.get("source"):
        missing.append("note or source")
    if missing:
        raise LimitsError(f"{where}: missing {', '.join(missing)}")
    if raw.get("compare", "exact") not in COMPARE:
        raise LimitsError(f"{where}: compare must be one of {', '.join(COMPARE)}, not {raw['compare']!r}")
    return spec


def _type_name(key: str) -> str:
    kind = _TYPES[key]
    return " or ".join(t.__name__ for t in kind) if isinstance(kind, tuple) else kind.__name__


def _check_onnx(where: str, op: str, raw: dict) -> None:
    """The attribute a check names is one of the op's in ONNX's schemas (any opset), and
    dtype names are ONNX's; skipped without onnx or for ops ONNX does not define."""
    schemas = onnx_schema_attributes()
    if schemas is None:
        return
    domain, _, name = op.rpartition("::")
    attrs = schemas.get(("" if domain == "ai.onnx" else domain, name))
    attr = raw.get("attribute")
    if attrs is not None and attr is not None and attr not in attrs:
        hint = difflib.get_close_matches(attr, sorted(attrs), 1)
        raise LimitsError(
            f"{where}: check {raw['check']}: ONNX {op} has no attribute {attr!r}"
            + (f" (did you mean {hint[0]!r}?)" if hint else f" (its attributes: {_names(attrs)})")
        )
    if raw["check"] == "input_dtype":
        from onnx import TensorProto

        unknown = [t for t in raw["allowed"] if t not in TensorProto.DataType.keys()]
        if unknown:
            raise LimitsError(f"{where}: check input_dtype: allowed names no ONNX type {unknown}")


def _names(attrs: set[str]) -> str:
    return ", ".join(sorted(attrs)) or "none"


@cache
def onnx_schema_attributes() -> dict[tuple[str, str], set[str]] | None:
    """``(domain, op) -> attribute names`` over every opset of ONNX's schemas (an attribute
    a later opset dropped still appears in older models); None without onnx."""
    try:
        from onnx import defs
    except ImportError:
        return None
    out: dict[tuple[str, str], set[str]] = {}
    for schema in defs.get_all_schemas_with_history():
        out.setdefault((schema.domain, schema.name), set()).update(schema.attributes)
    return out


def parse(data: dict, ops: dict, path: str = f"op_registry/{LIMITS_FILE}") -> dict[str, list[Limit]]:
    """Typed limits from the YAML at ``path``; a check of an unknown kind, with an unknown,
    missing or mistyped key, or naming an attribute the ONNX op does not have, is a
    :class:`LimitsError` naming the file, the op and the key."""
    out: dict[str, list[Limit]] = {}
    checks = data.get("checks") or {}
    if not isinstance(checks, dict):
        raise LimitsError(f"{path}: checks must be a mapping of op: list of checks")
    for op, op_checks in checks.items():
        if not isinstance(op_checks, list):
            raise LimitsError(f"{path}: {op}: the checks of an op are a list")
        for i, raw in enumerate(op_checks):
            where = f"{path}: {op}[{i}]"
            if not isinstance(raw, dict):
                raise LimitsError(f"{where}: a check is a mapping, not {raw!r}")
            _check_keys(where, raw)
            _check_onnx(where, op, raw)
            source = raw.get("source") or _plugin_source(op, raw["note"], ops)
            params = {k: v for k, v in raw.items() if k not in _COMMON}
            out.setdefault(op, []).append(
                Limit(op, raw["check"], raw["why"], source, params, raw.get("when_rank"))
            )
    return out


def load_limits(path: Path | None = None) -> dict[str, list[Limit]]:
    """The checks of ``path`` (the shipped limits.yaml by default), validated (:func:`parse`)."""
    from migrate.ops.registry import load_onnx

    shipped = op_registry_dir() / LIMITS_FILE
    path = shipped if path is None else path
    where = f"op_registry/{LIMITS_FILE}" if path == shipped else str(path)
    return parse(load_yaml(path), load_onnx("atc").ops, where)


@cache
def limits() -> dict[str, list[Limit]]:
    return load_limits()


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
