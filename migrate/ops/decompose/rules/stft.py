"""STFT (opset 17) of a real signal with static length and constant frame step/length ->
Gather (frames) * window, then MatMul with cosine and sine matrices (a direct DFT)."""

from __future__ import annotations

import numpy as np

from migrate.ops.decompose.registry import decomposition

EMITS = ["Reshape", "Gather", "Mul", "MatMul", "Unsqueeze", "Concat", "Constant", "CastLike"]


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
    if shape is None or len(shape) != 3 or shape[2] != 1:
        return b.decline("needs a real signal of static shape [batch, length, 1]")
    step = _const_int(node.inputs[1])
    length = _const_int(node.inputs[3]) if len(node.inputs) > 3 else None
    if length is None and window is not None and b.static_shape(window):
        length = b.static_shape(window)[0]
    if step is None or length is None or length > shape[1]:
        return b.decline("needs constant frame_step and frame_length (or a static window)")
    frames = 1 + (shape[1] - length) // step
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
