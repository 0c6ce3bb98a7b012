"""Gelu (opset 20) -> Erf or Tanh arithmetic."""

from __future__ import annotations

import math

from migrate.ops.decompose.build import Decline
from migrate.ops.decompositions import decomposition


@decomposition("gelu-erf", "Gelu", emits=["Mul", "Div", "Erf", "Add", "Constant", "CastLike"])
def gelu_erf(node, b):
    """0.5 * x * (1 + erf(x / sqrt(2))) for approximate='none'."""
    if b.attr("approximate", "none") != "none":
        return Decline("approximate is not 'none'")
    x = node.inputs[0]
    erf = b.op("Erf", b.op("Div", x, b.const(math.sqrt(2.0), like=x)))
    one_plus = b.op("Add", erf, b.const(1.0, like=x))
    return [b.op("Mul", b.op("Mul", x, b.const(0.5, like=x)), one_plus)]


@decomposition("gelu-tanh", "Gelu", emits=["Mul", "Add", "Tanh", "Constant", "CastLike"])
def gelu_tanh(node, b):
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) for approximate='tanh'."""
    if b.attr("approximate", "none") != "tanh":
        return Decline("approximate is not 'tanh'")
    x = node.inputs[0]
    cube = b.op("Mul", b.op("Mul", x, x), x)
    inner = b.op("Add", x, b.op("Mul", cube, b.const(0.044715, like=x)))
    t = b.op("Tanh", b.op("Mul", inner, b.const(math.sqrt(2.0 / math.pi), like=x)))
    one_plus = b.op("Add", t, b.const(1.0, like=x))
    return [b.op("Mul", b.op("Mul", x, b.const(0.5, like=x)), one_plus)]
