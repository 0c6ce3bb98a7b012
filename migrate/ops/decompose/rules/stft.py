"""STFT (opset 17) and DFT (17, 20) of signals with static length -> MatMul with cosine and
sine matrices (a direct DFT); STFT frames the signal with one Gather and a window Mul."""

from __future__ import annotations

import numpy as np

from migrate.ops.decompose.build import Decline
from migrate.ops.decompositions import decomposition

EMITS = ["Reshape", "Gather", "Mul", "MatMul", "Unsqueeze", "Concat", "Constant", "CastLike", "Sub", "Add"]


def _const_int(value) -> int | None:
    """The integer held by an initializer or a Constant node's output, else None."""
    if value is None:
        return None
    tensor = value.const_value
    if tensor is None:
        producer = value.producer()
        if producer is None or producer.op_type != "Constant" or "value" not in producer.attributes:
            return None
        tensor = producer.attributes["value"].value
    arr = np.asarray(tensor.numpy()).reshape(-1)
    return int(arr[0]) if arr.size == 1 else None


@decomposition("stft-dft-matmul", "STFT", emits=EMITS)
def stft(node, b):
    """Frames by Gather, windowed, times the DFT's cos/sin matrices (real input only)."""
    signal = node.inputs[0]
    window = node.inputs[2] if len(node.inputs) > 2 else None
    shape = b.static_shape(signal)
    # [batch, length, 1] as the spec writes it; [batch, length] as the TorchScript exporter
    # (dynamo=False) passes a real signal, and onnxruntime takes it
    if shape is None or not (len(shape) == 2 or (len(shape) == 3 and shape[2] == 1)):
        return Decline("needs a real signal of static shape [batch, length, 1] or [batch, length]")
    step = _const_int(node.inputs[1])
    length = _const_int(node.inputs[3]) if len(node.inputs) > 3 else None
    if length is None and window is not None and b.static_shape(window):
        length = b.static_shape(window)[0]
    if step is None or length is None or length > shape[1]:
        return Decline("needs constant frame_step and frame_length (or a static window)")
    if step <= 0 or length <= 0:
        return Decline("frame_step and frame_length must be positive")
    frames = 1 + (shape[1] - length) // step
    too_large = b.too_large(frames, length, what="frame index") or b.too_large(
        length, length // 2 + 1, what="DFT matrix"
    )
    if too_large:
        return too_large
    index = np.arange(frames)[:, None] * step + np.arange(length)[None, :]
    flat = b.op("Reshape", signal, b.ints([0, shape[1]]))
    framed = b.op("Gather", flat, b.const(index.astype(np.int64)), axis=1)
    if window is not None:
        framed = b.op("Mul", framed, window)
    bins = length // 2 + 1 if b.attr("onesided", 1) else length
    angle = 2.0 * np.pi * np.outer(np.arange(length), np.arange(bins)) / length
    real = b.op("MatMul", framed, b.const(np.cos(angle), like=signal))
    imag = b.op("MatMul", framed, b.const(-np.sin(angle), like=signal))
    parts = [b.op("Unsqueeze", p, b.ints([-1])) for p in (real, imag)]
    return [b.op("Concat", *parts, axis=-1)]


def _dft_axis(node, b, rank: int) -> int | None:
    if b.opset >= 20:
        axis = _const_int(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else -2
    else:
        axis = b.attr("axis", 1)
    return None if axis is None else axis % rank


@decomposition("dft-matmul", "DFT", emits=EMITS)
def dft(node, b):
    """Y = X @ (cos +- i sin) along the signal axis (1/N for inverse), real or complex X."""
    x = node.inputs[0]
    shape = b.static_shape(x)
    if shape is None or len(shape) < 3 or shape[-1] not in (1, 2):
        return Decline("needs a signal of static shape [..., N, 1 or 2]")
    if _dft_axis(node, b, len(shape)) != len(shape) - 2:
        return Decline("only the axis just before the real/imaginary axis is covered")
    n = shape[-2]
    length = node.inputs[1] if len(node.inputs) > 1 else None
    if length is not None and _const_int(length) != n:
        return Decline("dft_length other than the signal length (padding) is not covered")
    inverse, onesided = bool(b.attr("inverse", 0)), bool(b.attr("onesided", 0))
    bins = n // 2 + 1 if onesided else n
    too_large = b.too_large(n, bins, what="DFT matrix")
    if too_large:
        return too_large
    angle = 2.0 * np.pi * np.outer(np.arange(n), np.arange(bins)) / n
    sign, norm = (1.0, 1.0 / n) if inverse else (-1.0, 1.0)
    cos = b.const(np.cos(angle) * norm, like=x)
    sin = b.const(np.sin(angle) * sign * norm, like=x)
    flat = [*shape[:-2], n]
    if shape[-1] == 1:
        re = b.op("Reshape", x, b.ints(flat))
        real, imag = b.op("MatMul", re, cos), b.op("MatMul", re, sin)
    else:
        re = b.op("Reshape", b.op("Gather", x, b.const(np.int64(0)), axis=-1), b.ints(flat))
        im = b.op("Reshape", b.op("Gather", x, b.const(np.int64(1)), axis=-1), b.ints(flat))
        real = b.op("Sub", b.op("MatMul", re, cos), b.op("MatMul", im, sin))
        imag = b.op("Add", b.op("MatMul", re, sin), b.op("MatMul", im, cos))
    parts = [b.op("Unsqueeze", p, b.ints([-1])) for p in (real, imag)]
    return [b.op("Concat", *parts, axis=-1)]
