"""Attention (opset 23, what torch.onnx.export emits for scaled_dot_product_attention) ->
MatMul / Softmax arithmetic, following the ONNX reference implementation's order: scale
Q and K by sqrt(scale), Q @ K^T, softcap, add the mask bias (causal and/or attn_mask),
softmax, @ V. Grouped-query attention repeats each KV head (interleaved)."""

from __future__ import annotations

import math

import numpy as np

from migrate.ops.decompose.build import Decline
from migrate.ops.decompositions import decomposition

EMITS = [
    "Mul",
    "Transpose",
    "MatMul",
    "Add",
    "Softmax",
    "Where",
    "Constant",
    "Tanh",
    "Div",
    "Unsqueeze",
    "Expand",
    "Reshape",
    "CastLike",
]
_FLOATS = {"FLOAT", "FLOAT16", "BFLOAT16", "DOUBLE"}


def _unsupported(node, b) -> str | None:
    """Why this rule does not cover the node's form, or None."""
    q, k, v = node.inputs[:3]
    if any(b.static_shape(t) is None or len(b.static_shape(t)) != 4 for t in (q, k, v)):
        return "needs 4-D Q, K, V of static shape (3-D inputs are not covered)"
    if b.dtype_name(q) not in _FLOATS:
        return "needs floating Q of known dtype"
    if any(i is not None for i in node.inputs[4:]):
        return "past_key / past_value / nonpad_kv_seqlen inputs are not covered"
    if any(o.uses() or o.is_graph_output() for o in node.outputs[1:]):
        return "present_key / present_value / qk_matmul_output outputs are used"
    if b.attr("softmax_precision") is not None:
        return "softmax_precision is set"
    hq, hk = b.static_shape(q)[1], b.static_shape(k)[1]
    if hq != hk and (hq % hk or b.static_shape(v)[1] != hk):
        return f"{hq} query heads cannot share {hk} key/value heads"
    return None


def _repeat_heads(b, t, reps: int):
    """(B, Hkv, S, D) -> (B, Hkv * reps, S, D), each head repeated ``reps`` times in place."""
    batch, heads, seq, dim = b.static_shape(t)
    wide = b.op("Expand", b.op("Unsqueeze", t, b.ints([2])), b.ints([1, 1, reps, 1, 1]))
    return b.op("Reshape", wide, b.ints([batch, heads * reps, seq, dim]))


def _bias(node, b, scores, sq: int, skv: int):
    """scores + the additive mask of is_causal and attn_mask (bool: where, float: add), or
    the decline."""
    q = node.inputs[0]
    mask = node.inputs[3] if len(node.inputs) > 3 else None
    is_bool = mask is not None and b.dtype_name(mask) == "BOOL"
    if mask is not None:
        shape = b.static_shape(mask)
        if shape is not None and shape[-1] != skv:
            return Decline("attn_mask shorter than the key sequence (padding) is not covered")
        if not is_bool and b.dtype_name(mask) is None:
            return Decline("attn_mask of unknown dtype")
    if b.attr("is_causal", 0):
        too_large = b.too_large(sq, skv, what="causal mask")
        if too_large:
            return too_large
        allowed = np.tril(np.ones((sq, skv), dtype=bool))  # top-left aligned: no KV cache
        if mask is None:
            mask, is_bool = b.const(allowed, dtype=bool), True
        elif is_bool:
            mask = b.op("Where", b.const(allowed, dtype=bool), mask, b.const(False, dtype=bool))
        else:
            mask = b.op("Add", mask, b.const(np.where(allowed, 0.0, -np.inf), like=q))
    if mask is None:
        return scores
    if is_bool:
        return b.op("Where", mask, scores, b.const(-np.inf, like=q))
    return b.op("Add", scores, mask)


@decomposition("attention-matmul", "Attention", emits=EMITS)
def attention(node, b):
    """softmax(softcap(Q K^T * scale) + mask) V for 4-D Q/K/V without a KV cache."""
    why = _unsupported(node, b)
    if why:
        return Decline(why)
    q, k, v = node.inputs[:3]
    _, hq, sq, dim = b.static_shape(q)
    hk, skv = b.static_shape(k)[1], b.static_shape(k)[2]
    if hq != hk:
        k, v = _repeat_heads(b, k, hq // hk), _repeat_heads(b, v, hq // hk)
    scale = b.attr("scale")
    root = math.sqrt(scale if scale is not None else 1.0 / math.sqrt(dim))
    qs = b.op("Mul", q, b.const(root, like=q))
    kt = b.op("Transpose", b.op("Mul", k, b.const(root, like=q)), perm=[0, 1, 3, 2])
    scores = b.op("MatMul", qs, kt)
    softcap = b.attr("softcap", 0.0) or 0.0
    if softcap > 0:
        cap = b.const(softcap, like=q)
        scores = b.op("Mul", b.op("Tanh", b.op("Div", scores, cap)), cap)
    biased = _bias(node, b, scores, sq, skv)
    if isinstance(biased, Decline):
        return biased
    return [b.op("MatMul", b.op("Softmax", biased, axis=-1), v)]
