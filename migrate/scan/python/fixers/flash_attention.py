"""flash_attn.flash_attn_func / flash_attn_varlen_func -> torch_npu.npu_fusion_attention.

The call keeps its arguments and calls a helper written into the file, which maps them as
transformers' NPU shim does: layout BSND (TND for varlen, with ``cu_seqlens[1:]`` passed
as host lists), ``keep_prob = 1 - dropout_p``, softmax scale defaulting to
``headdim ** -0.5``, causal masking by a 2048x2048 bool mask with ``sparse_mode=3``
(bottom-right aligned, as flash_attn >= 2.1). Calls using sliding windows, softcap, ALiBi
or ``return_attn_probs`` are declined: npu_fusion_attention has no direct equivalent.
When every imported flash_attn name is rewritten, the import goes too.
"""

from __future__ import annotations

import ast

from migrate.core.findings import Draft
from migrate.scan.python.fixers import FixContext, fixer
from migrate.scan.python.fixers._support import bind_args, helper_edits, import_group, is_const

FUNC_PARAMS = [
    "q",
    "k",
    "v",
    "dropout_p",
    "softmax_scale",
    "causal",
    "window_size",
    "softcap",
    "alibi_slopes",
    "deterministic",
    "return_attn_probs",
]
VARLEN_PARAMS = [
    "q",
    "k",
    "v",
    "cu_seqlens_q",
    "cu_seqlens_k",
    "max_seqlen_q",
    "max_seqlen_k",
    *FUNC_PARAMS[3:],
]
# Arguments with no mapping: a call may pass them only with their default value.
UNMAPPED = {
    "window_size": ((-1, -1),),
    "softcap": (0.0, 0),
    "alibi_slopes": (None,),
    "return_attn_probs": (False,),
}

FUNC_HELPER = '''\
def npu_flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,
                        deterministic=False):
    """flash_attn_func on Ascend via torch_npu.npu_fusion_attention (written by migrate).

    q, k, v: (batch, seqlen, nheads, headdim), layout "BSND". A causal mask is aligned to
    the bottom-right corner (sparse_mode=3), as in flash_attn >= 2.1. `deterministic` is
    accepted for compatibility; the NPU kernel chooses its own backward algorithm.
    """
    if softmax_scale is None:
        softmax_scale = q.shape[-1] ** -0.5
    atten_mask, sparse_mode = None, 0
    if causal:
        atten_mask = torch.triu(torch.ones(2048, 2048, device=q.device), diagonal=1).bool()
        sparse_mode = 3
    return torch_npu.npu_fusion_attention(
        q, k, v, q.shape[2], "BSND",
        atten_mask=atten_mask, scale=softmax_scale, keep_prob=1.0 - dropout_p,
        sparse_mode=sparse_mode,
    )[0]
'''

VARLEN_HELPER = '''\
def npu_flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None,
                               max_seqlen_k=None, dropout_p=0.0, softmax_scale=None,
                               causal=False, deterministic=False):
    """flash_attn_varlen_func on Ascend via torch_npu.npu_fusion_attention (written by migrate).

    q, k, v: (total_tokens, nheads, headdim), layout "TND". The kernel takes the cumulative
    sequence lengths without the leading 0, as host lists. max_seqlen_* are not needed.
    """
    if softmax_scale is None:
        softmax_scale = q.shape[-1] ** -0.5
    atten_mask, sparse_mode = None, 0
    if causal:
        atten_mask = torch.triu(torch.ones(2048, 2048, device=q.device), diagonal=1).bool()
        sparse_mode = 3
    return torch_npu.npu_fusion_attention(
        q, k, v, q.shape[1], "TND",
        atten_mask=atten_mask, scale=softmax_scale, keep_prob=1.0 - dropout_p,
        actual_seq_qlen=cu_seqlens_q[1:].tolist(), actual_seq_kvlen=cu_seqlens_k[1:].tolist(),
        sparse_mode=sparse_mode,
    )[0]
'''

DESCRIPTION = (
    "call {name}, a helper written into this file that runs torch_npu.npu_fusion_attention "
    "(keep_prob = 1 - dropout_p, causal via sparse_mode=3); numerics differ slightly from "
    "flash_attn and dropout draws different random masks"
)


def _unmapped_defaults_only(bound: dict[str, ast.expr]) -> bool:
    for name, defaults in UNMAPPED.items():
        node = bound.get(name)
        if node is None:
            continue
        if name == "window_size":
            try:
                if ast.literal_eval(node) not in defaults:
                    return False
            except ValueError:
                return False
        elif not is_const(node, *defaults):
            return False
    return True


KINDS = {  # last part of the qualified name -> (parameters, helper name, helper code)
    "flash_attn_func": (FUNC_PARAMS, "npu_flash_attn_func", FUNC_HELPER),
    "flash_attn_varlen_func": (VARLEN_PARAMS, "npu_flash_attn_varlen_func", VARLEN_HELPER),
}


def _kind(qualname: str) -> tuple | None:
    if not qualname.startswith("flash_attn."):
        return None
    return KINDS.get(qualname.rsplit(".", 1)[1])


def _accepts(qualname: str, call: ast.Call) -> bool:
    kind = _kind(qualname)
    bound = bind_args(call, kind[0]) if kind else None
    return bound is not None and _unmapped_defaults_only(bound)


@fixer("flash-attention")
def flash_attention(ctx: FixContext, call: ast.Call) -> Draft | None:
    if not _accepts(ctx.qualname, call):
        return None
    group = import_group(ctx, _accepts)
    uses = group[1] if group else [(call, ctx.qualname)]
    edits = [ctx.replace(c.func, (_kind(q) or ("", q))[1]) for c, q in uses]  # all accepted
    helpers = [(k[1], k[2]) for k in KINDS.values() if any(_kind(q) is k for _, q in uses)]
    edits += helper_edits(ctx, helpers, [c for c, _ in uses], group[0] if group else None)
    name = " and ".join(n for n, _ in helpers)
    return Draft(DESCRIPTION.format(name=name), edits, ["import torch", "import torch_npu"])
