"""LayerNormalization (17) and RMSNormalization (23) -> ReduceMean arithmetic."""

from __future__ import annotations

from migrate.ops.decompose.build import Decline
from migrate.ops.decompositions import decomposition

_LOW_PRECISION = {"FLOAT16", "BFLOAT16"}
NORM_EMITS = ["ReduceMean", "Sub", "Mul", "Add", "Div", "Sqrt", "Reciprocal", "Cast", "Constant", "CastLike"]


def _axes(node, b, x) -> list[int] | Decline:
    axis = b.attr("axis", -1)
    if axis >= 0:
        shape = b.static_shape(x)
        if shape is None:
            return Decline("positive axis needs a known input rank")
        axis -= len(shape)
    return list(range(axis, 0))


def _mean(b, value, axes):
    if b.opset >= 18:
        return b.op("ReduceMean", value, b.ints(axes), keepdims=1)
    return b.op("ReduceMean", value, axes=axes, keepdims=1)


def _stash(node, b, x):
    """Compute in float32 when stash_type=1 and x is 16-bit (as the spec says)."""
    if b.attr("stash_type", 1) == 1 and b.dtype_name(x) in _LOW_PRECISION:
        return b.op("Cast", x, to=1), True
    return x, False


def _finish(node, b, normed, cast_back):
    x = node.inputs[0]
    if cast_back:
        normed = b.op("CastLike", normed, x)
    out = b.op("Mul", normed, node.inputs[1])
    if len(node.inputs) > 2 and node.inputs[2] is not None:
        out = b.op("Add", out, node.inputs[2])
    return out


@decomposition("layer-norm", "LayerNormalization", emits=NORM_EMITS)
def layer_norm(node, b):
    """(x - mean) * invstd * scale + bias over the trailing axes from `axis`; also Mean and
    InvStdDev (in the stash type) when the node has those outputs."""
    x = node.inputs[0]
    axes = _axes(node, b, x)
    if isinstance(axes, Decline):
        return axes
    xs, cast_back = _stash(node, b, x)
    mean = _mean(b, xs, axes)
    centred = b.op("Sub", xs, mean)
    var = _mean(b, b.op("Mul", centred, centred), axes)
    eps = b.const(b.attr("epsilon", 1e-5), like=xs)
    inv = b.op("Reciprocal", b.op("Sqrt", b.op("Add", var, eps)))
    normed = b.op("Mul", centred, inv)
    return [_finish(node, b, normed, cast_back), mean, inv][: len(node.outputs)]


@decomposition("rms-norm", "RMSNormalization", emits=NORM_EMITS)
def rms_norm(node, b):
    """x / sqrt(mean(x^2) + eps) * scale over the trailing axes from `axis`."""
    x = node.inputs[0]
    axes = _axes(node, b, x)
    if isinstance(axes, Decline):
        return axes
    xs, cast_back = _stash(node, b, x)
    ms = _mean(b, b.op("Mul", xs, xs), axes)
    eps = b.const(b.attr("epsilon", 1e-5), like=xs)
    normed = b.op("Div", xs, b.op("Sqrt", b.op("Add", ms, eps)))
    return [_finish(node, b, normed, cast_back)]
