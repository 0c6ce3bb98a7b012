"""A small builder over onnx_ir: new nodes go into a tape, constants become Constant nodes."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAX_CONST_ELEMENTS = 1 << 24  # a constant a rewrite may add (a mask, a DFT matrix): 64 MB f32


@dataclass(frozen=True)
class Decline:
    """A rule's answer when it does not rewrite the node: the reason goes to the report."""

    reason: str


class Builder:
    def __init__(self, node, opset: int):
        import onnx_ir as ir

        self.ir = ir
        self.node = node
        self.opset = opset
        self.tape = ir.tape.Tape()
        self._n = 0

    def op(self, op_type: str, *inputs, **attrs):
        clean = {k: v for k, v in attrs.items() if v is not None}
        return self.tape.op(op_type, list(inputs), clean or None, name=self._name(op_type))

    def _name(self, op_type: str) -> str:
        self._n += 1
        return f"{self.node.name or self.node.op_type}/{op_type}_{self._n}"

    def const(self, value, like=None, dtype=None):
        """A Constant node; float constants take ``like``'s dtype (CastLike if unknown)."""
        arr = np.asarray(value)
        if dtype is not None:
            arr = arr.astype(dtype)
        elif like is not None and arr.dtype.kind == "f":
            known = self.np_dtype(like)
            if known is None:
                out = self.op("Constant", value=self.ir.tensor(arr.astype(np.float32)))
                return self.op("CastLike", out, like)
            arr = arr.astype(known)
        return self.op("Constant", value=self.ir.tensor(arr))

    def ints(self, values) -> object:
        return self.const(np.asarray(list(values), dtype=np.int64))

    def dtype_name(self, value) -> str | None:
        return value.dtype.name if value is not None and value.dtype is not None else None

    def np_dtype(self, value):
        if value is None or value.dtype is None:
            return None
        try:
            return value.dtype.numpy()
        except (TypeError, ValueError, AttributeError):
            return None

    def static_shape(self, value) -> list[int] | None:
        if value is None or value.shape is None:
            return None
        dims = list(value.shape)
        return dims if all(isinstance(d, int) for d in dims) else None

    def too_large(self, *dims: int, what: str = "constant") -> Decline | None:
        """The decline when a constant of shape ``dims`` may not be built (declared shapes are
        untrusted: a sequence of 2^20 would make a 2^40-element mask), else None."""
        n = math.prod(max(int(d), 0) for d in dims)
        if n <= MAX_CONST_ELEMENTS:
            return None
        return Decline(f"the {what} would hold {n} elements (limit {MAX_CONST_ELEMENTS})")

    def attr(self, name: str, default=None):
        a = self.node.attributes.get(name)
        return default if a is None else a.value
