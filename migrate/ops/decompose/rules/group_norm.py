"""GroupNormalization (18, 21) -> Reshape / ReduceMean arithmetic."""

from __future__ import annotations

from migrate.ops.decompose.build import Decline
from migrate.ops.decompose.rules.norm import _mean, _stash
from migrate.ops.decompositions import decomposition

EMITS = [
    "Reshape",
    "Shape",
    "ReduceMean",
    "Sub",
    "Mul",
    "Add",
    "Sqrt",
    "Reciprocal",
    "Cast",
    "CastLike",
    "Constant",
]


@decomposition("group-norm", "GroupNormalization", emits=EMITS)
def group_norm(node, b):
    """Normalise each of num_groups channel groups over (channels in group, spatial), then
    per-channel scale and bias (opset 21; per-group scale and bias at opset 18)."""
    x, scale, bias = node.inputs[0], node.inputs[1], node.inputs[2]
    shape = b.static_shape(x)
    rank = len(x.shape) if x.shape is not None else None
    if rank is None or rank < 3:
        return Decline("needs an input of known rank >= 3")
    groups = b.attr("num_groups")
    channels = shape[1] if shape is not None else (x.shape[1] if isinstance(x.shape[1], int) else None)
    if groups is None or channels is None or channels % groups:
        return Decline("needs num_groups and a static channel count divisible by it")
    xs, cast_back = _stash(node, b, x)
    grouped = b.op("Reshape", xs, b.ints([0, groups, -1]))
    mean = _mean(b, grouped, [-1])
    centred = b.op("Sub", grouped, mean)
    var = _mean(b, b.op("Mul", centred, centred), [-1])
    eps = b.const(b.attr("epsilon", 1e-5), like=xs)
    normed = b.op("Mul", centred, b.op("Reciprocal", b.op("Sqrt", b.op("Add", var, eps))))
    normed = b.op("Reshape", normed, b.op("Shape", x))
    if cast_back:
        normed = b.op("CastLike", normed, x)
    per_group = b.opset < 21  # opset 18's scale/bias have one value per group
    if per_group and groups != channels:
        rep = channels // groups
        scale = b.op(
            "Reshape",
            b.op("Mul", b.op("Reshape", scale, b.ints([-1, 1])), b.const([[1.0] * rep], like=x)),
            b.ints([-1]),
        )
        bias = b.op(
            "Reshape",
            b.op("Mul", b.op("Reshape", bias, b.ints([-1, 1])), b.const([[1.0] * rep], like=x)),
            b.ints([-1]),
        )
    bcast = b.ints([-1] + [1] * (rank - 2))
    out = b.op("Mul", normed, b.op("Reshape", scale, bcast))
    return [b.op("Add", out, b.op("Reshape", bias, bcast))]
