"""Lower a model's default-domain opset where every node still means the same thing."""

from __future__ import annotations

from functools import cache

from migrate.core.resources import op_registry_dir
from migrate.ops.registry import load_yaml


@cache
def _table() -> dict:
    return load_yaml(op_registry_dir() / "onnx" / "opset_lowering.yaml")


def _schema(op: str, opset: int):
    import onnx.defs

    try:
        return onnx.defs.get_schema(op, opset)
    except onnx.defs.SchemaError:
        return None


def _attr_default(schema, name):
    import onnx.helper

    attr = schema.attributes.get(name)
    if attr is None or not attr.default_value.name:
        return None
    return onnx.helper.get_attribute_value(attr.default_value)


def _norm(value):
    return value.decode() if isinstance(value, bytes) else value


def blocker(node, opset: int, target: str | int) -> str | None:
    """Why ``node`` cannot move from ``opset`` to ``target``; None if it can."""
    new, old = _schema(node.op_type, opset), _schema(node.op_type, int(target))
    if new is None or (old is not None and old.since_version == new.since_version):
        return None
    if old is None:
        return f"{node.op_type} does not exist at opset {target}"
    rule = _table().get(node.op_type) or {}
    if rule.get("block"):
        return rule["block"]
    for name, attr in node.attributes.items():
        value = _norm(attr.value)
        if value in (rule.get("forbid_values") or {}).get(name, []):
            return f"{node.op_type} {name}={value!r} has no opset-{target} equivalent"
        if name not in old.attributes and value != _norm(_attr_default(new, name)):
            return f"{node.op_type} sets {name}, which opset {target} lacks"
    first = node.inputs[0] if node.inputs else None
    is_float = first is not None and first.dtype is not None and first.dtype.is_floating_point()
    for name, want in (rule.get("float_needs") or {}).items():
        attr = node.attributes.get(name)
        have = _attr_default(new, name) if attr is None else attr.value
        if is_float and have != want:
            return f"{node.op_type} on floats needs {name}={want} at opset {target}"
    if len(node.inputs) > len(old.inputs) and not old.inputs[-1].option.name == "Variadic":
        return f"{node.op_type} has more inputs than opset {target} allows"
    if rule.get("rank") and node.inputs and node.inputs[0] is not None:
        shape = node.inputs[0].shape
        if shape is None or len(shape) != rule["rank"]:
            return f"{node.op_type} at opset {target} needs rank-{rule['rank']} input"
    return _dtype_blocker(node, old, target)


def _dtype_blocker(node, old, target) -> str | None:
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in old.type_constraints}
    for i, value in enumerate(node.inputs):
        if value is None or value.dtype is None or i >= len(old.inputs):
            continue
        types = allowed.get(old.inputs[i].type_str)
        name = f"tensor({_onnx_type_name(value.dtype)})"
        if types and name not in types:
            return f"{node.op_type} input {i} is {name}, not allowed at opset {target}"
    return None


def _onnx_type_name(dtype) -> str:
    import onnx

    return onnx.helper.tensor_dtype_to_string(int(dtype)).split(".")[-1].lower()


def rename_values(node) -> None:
    import onnx_ir as ir

    for name, mapping in ((_table().get(node.op_type) or {}).get("rename_values") or {}).items():
        attr = node.attributes.get(name)
        if attr is not None and _norm(attr.value) in mapping:
            node.attributes[name] = ir.AttrString(name, mapping[_norm(attr.value)])
