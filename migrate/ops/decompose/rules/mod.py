"""Mod -> Div/Mul/Sub arithmetic: integer floor-mod (fmod=0) and C fmod (fmod=1)."""

from __future__ import annotations

from migrate.ops.decompose.build import Decline
from migrate.ops.decompositions import decomposition

MOD_EMITS = [
    "Div",
    "Mul",
    "Sub",
    "Add",
    "Less",
    "Xor",
    "Equal",
    "Not",
    "And",
    "Where",
    "Floor",
    "Ceil",
    "Constant",
]
_FLOATS = {"FLOAT", "FLOAT16", "BFLOAT16", "DOUBLE"}


def _zero(b, like):
    known = b.np_dtype(like)
    if known is None:
        return None
    return b.const(0, dtype=known)


@decomposition("mod-arith", "Mod", emits=MOD_EMITS)
def mod_arith(node, b):
    """fmod=1: a - b*trunc(a/b); fmod=0: the remainder takes the divisor's sign (integers:
    fix up the truncated remainder; floats, allowed from opset 28: a - b*floor(a/b))."""
    a, d = node.inputs[0], node.inputs[1]
    is_float = b.dtype_name(a) in _FLOATS
    zero = _zero(b, a)
    if zero is None:
        return Decline("input dtype unknown")
    fmod = b.attr("fmod", 0)
    if is_float and fmod != 1:
        if b.opset < 28:
            return Decline("float Mod requires fmod=1 before opset 28")
        return [b.op("Sub", a, b.op("Mul", d, b.op("Floor", b.op("Div", a, d))))]
    q = b.op("Div", a, d)  # integers: truncates toward zero, as C
    if is_float:
        q = b.op("Where", b.op("Less", q, zero), b.op("Ceil", q), b.op("Floor", q))
    rem = b.op("Sub", a, b.op("Mul", d, q))
    if fmod == 1:
        return [rem]
    differ = b.op("Xor", b.op("Less", rem, zero), b.op("Less", d, zero))
    fix = b.op("And", b.op("Not", b.op("Equal", rem, zero)), differ)
    return [b.op("Where", fix, b.op("Add", rem, d), rem)]
