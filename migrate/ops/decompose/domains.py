"""Random verification inputs that are valid where a value indexes another input
(``domains.yaml``): RoiAlign's batch indices, Gather's indices ... are drawn from [0, n) of
the axis they index, traced back to the graph input (or the column of it) they come from.
Every other input is random as before (``verify.random_inputs``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from migrate.core.errors import UsageError

TABLE = Path(__file__).with_name("domains.yaml")
_PASS = {"Cast", "Identity", "Squeeze", "Unsqueeze", "Reshape", "Flatten"}  # values kept
_SAME_SHAPE = {"Cast", "Identity"}  # values and axes kept (after a column is selected)
_INTS = {
    "tensor(int8)",
    "tensor(int16)",
    "tensor(int32)",
    "tensor(int64)",
    "tensor(uint8)",
    "tensor(uint16)",
    "tensor(uint32)",
    "tensor(uint64)",
}


@dataclass(frozen=True)
class Domain:
    op: str
    input: int
    name: str
    of_input: int
    axis: int | None
    axis_attr: str | None
    default: int
    source: str


def _check(row: dict, where: str) -> Domain:
    import onnx.defs

    keys = {"op", "input", "name", "index_of", "source"}
    if not isinstance(row, dict) or set(row) != keys:
        raise ValueError(f"{where}: keys must be {sorted(keys)}")
    of = row["index_of"]
    if not isinstance(of, dict) or not set(of) <= {"input", "axis", "axis_attr", "default"}:
        raise ValueError(f"{where}: index_of takes input, axis or axis_attr (and default)")
    if ("axis" in of) == ("axis_attr" in of):
        raise ValueError(f"{where}: index_of names exactly one of axis, axis_attr")
    try:
        schema = onnx.defs.get_schema(row["op"])
    except onnx.defs.SchemaError:
        raise ValueError(f"{where}: {row['op']!r} is not an ONNX operator") from None
    pos = row["input"]
    if (
        not isinstance(pos, int)
        or not 0 <= pos < len(schema.inputs)
        or schema.inputs[pos].name != row["name"]
    ):
        raise ValueError(f"{where}: input {pos} of {row['op']} is not {row['name']!r}")
    allowed = {
        t
        for c in schema.type_constraints
        if c.type_param_str == schema.inputs[pos].type_str
        for t in c.allowed_type_strs
    } or {schema.inputs[pos].type_str}
    if not allowed <= _INTS:
        raise ValueError(f"{where}: {row['op']}'s {row['name']} is not an integer input ({sorted(allowed)})")
    return Domain(
        row["op"],
        pos,
        row["name"],
        int(of["input"]),
        of.get("axis"),
        of.get("axis_attr"),
        int(of.get("default", 0)),
        str(row["source"]),
    )


@cache
def domains(path: Path = TABLE) -> dict[str, list[Domain]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    out: dict[str, list[Domain]] = {}
    for i, row in enumerate((data or {}).get("domains") or ()):
        d = _check(row, f"{path.name}: domains[{i}]")
        out.setdefault(d.op, []).append(d)
    return out


def _const(value):
    """The numpy value of an initializer or a Constant node's output, else None."""
    import numpy as np

    if value is None:
        return None
    if value.const_value is not None:
        return np.asarray(value.const_value.numpy())
    node = value.producer()
    if node is not None and node.op_type == "Constant" and "value" in node.attributes:
        return np.asarray(node.attributes["value"].value.numpy())
    return None


def _one(value) -> int | None:
    arr = _const(value)
    return int(arr.reshape(-1)[0]) if arr is not None and arr.size == 1 else None


def _column(node) -> tuple[int, int] | None:
    """(axis, index) when ``node`` selects one index along one axis (Gather of one constant
    index, Slice of one constant step-1 range), else None."""
    rank = len(node.inputs[0].shape) if node.inputs[0].shape is not None else None
    if node.op_type == "Gather":
        index = _one(node.inputs[1])
        attr = node.attributes.get("axis")
        axis = attr.value if attr is not None else 0
    elif node.op_type == "Slice" and len(node.inputs) >= 4:
        start, end, axis = (_one(v) for v in node.inputs[1:4])
        steps = _one(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else 1
        if start is None or end is None or axis is None or steps != 1 or end != start + 1:
            return None
        index = start
    else:
        return None
    if index is None or (axis < 0 and rank is None):
        return None
    return (axis % rank if rank else axis), index


def trace(value, inputs: set[str]):
    """(graph input name, (axis, index) or None) the values of ``value`` come from."""
    column = None
    for _ in range(64):
        if value is None:
            return None
        if value.name in inputs and value.producer() is None:
            return value.name, column
        node = value.producer()
        if node is None or not node.inputs or node.inputs[0] is None:
            return None
        if node.op_type in (_SAME_SHAPE if column else _PASS):
            value = node.inputs[0]
            continue
        picked = None if column else _column(node)
        if picked is None:
            return None
        column, value = picked, node.inputs[0]
    return None


def _upper(node, d: Domain, feeds: dict) -> int | None:
    data = node.inputs[d.of_input] if d.of_input < len(node.inputs) else None
    if data is None:
        return None
    axis = d.axis
    if axis is None:
        attr = node.attributes.get(d.axis_attr)
        axis = attr.value if attr is not None else d.default
    shape = (
        list(feeds[data.name].shape)
        if data.name in feeds
        else (list(data.shape) if data.shape is not None else None)
    )
    if shape is None or not -len(shape) <= axis < len(shape):
        return None
    n = shape[axis]
    return n if isinstance(n, int) and n > 0 else None


class _Meta:
    def __init__(self, value):
        self.name = value.name
        self.shape = [d if isinstance(d, int) else None for d in value.shape] if value.shape else []
        self.type = f"tensor({value.dtype.name.lower()})" if value.dtype is not None else "tensor(undefined)"


class _Inputs:
    def __init__(self, model):
        self.metas = [_Meta(v) for v in model.graph.inputs if v.const_value is None]

    def get_inputs(self):
        return self.metas


def valid_feeds(model, seed: int = 0) -> dict | None:
    """Random feeds for ``model`` (an onnx_ir Model, before any rewrite) with every traced
    index input drawn from [0, n); None when no input could be made at random (the check
    then makes its own and says why)."""
    import numpy as np

    from migrate.ops.verify import random_inputs

    try:
        feeds = random_inputs(_Inputs(model), seed)
    except (ValueError, UsageError):
        return None
    rng = np.random.default_rng(seed + 1)
    table = domains()
    names = set(feeds)
    for node in model.graph:
        for d in table.get(node.op_type, ()) if node.domain in ("", "ai.onnx") else ():
            if d.input >= len(node.inputs) or node.inputs[d.input] is None:
                continue
            found = trace(node.inputs[d.input], names)
            n = _upper(node, d, feeds)
            if found is None or n is None:
                continue
            name, column = found
            feed = feeds[name]
            where = [slice(None)] * feed.ndim
            if column is not None:
                if column[0] >= feed.ndim or not -feed.shape[column[0]] <= column[1] < feed.shape[column[0]]:
                    continue
                where[column[0]] = column[1]
            part = feed[tuple(where)]
            feed[tuple(where)] = rng.integers(0, n, size=np.shape(part)).astype(feed.dtype)
    return feeds
