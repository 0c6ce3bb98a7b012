"""ReduceL2 (18, which ATC registers only up to 17) -> Sqrt(ReduceSum(x * x))."""

from __future__ import annotations

from migrate.ops.decompose.build import Decline
from migrate.ops.decompositions import decomposition

_FLOATS = {"FLOAT", "FLOAT16", "BFLOAT16", "DOUBLE"}


@decomposition("reduce-l2-sumsq", "ReduceL2", emits=["Mul", "ReduceSum", "Sqrt"])
def reduce_l2(node, b):
    """sqrt(sum(x^2)) over the same axes, keepdims and noop_with_empty_axes as the node."""
    x = node.inputs[0]
    if b.dtype_name(x) not in _FLOATS:
        return Decline("needs a floating input of known dtype")
    axes = node.inputs[1] if len(node.inputs) > 1 else None
    if b.attr("noop_with_empty_axes", 0) and axes is None:
        return Decline("noop_with_empty_axes=1 without axes returns x itself")
    if b.opset < 18:
        return Decline("below opset 18 ATC converts ReduceL2 itself")
    summed = b.op(
        "ReduceSum",
        b.op("Mul", x, x),
        *([axes] if axes is not None else []),
        keepdims=b.attr("keepdims", 1),
        noop_with_empty_axes=b.attr("noop_with_empty_axes"),
    )
    return [b.op("Sqrt", summed)]
