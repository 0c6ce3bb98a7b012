"""xformers.ops.memory_efficient_attention -> torch_npu.npu_fusion_attention.

The call goes to a helper written into the file. ``attn_bias=LowerTriangularMask()``
becomes ``causal=True`` (top-left aligned, ``sparse_mode=2``, as xformers' mask); a tensor
bias runs torch's scaled_dot_product_attention instead (npu_fusion_attention applies its
``pse`` before the scale, so an additive bias does not map onto it one to one). Other
xformers bias objects (block-diagonal, ...) and ``op=``/``output_dtype=`` are declined.
"""

from __future__ import annotations

import ast

from migrate.core.findings import Draft, Edit
from migrate.scan.python.fixers import FixContext, fixer
from migrate.scan.python.fixers._support import (
    bind_args,
    helper_edits,
    is_const,
    module_tree,
    remove_statement,
)

PARAMS = ["query", "key", "value", "attn_bias", "p", "scale", "op", "output_dtype"]
NAME = "npu_memory_efficient_attention"

HELPER = '''\
def npu_memory_efficient_attention(query, key, value, attn_bias=None, p=0.0, scale=None,
                                   causal=False):
    """xformers memory_efficient_attention on Ascend (written by migrate).

    query, key, value: (batch, seqlen, heads, headdim), layout "BSND". causal=True stands
    for xformers' LowerTriangularMask (top-left aligned, sparse_mode=2). A tensor
    attn_bias is added to the scores, which torch's SDPA does on the NPU as well.
    """
    if scale is None:
        scale = query.shape[-1] ** -0.5
    if attn_bias is not None:
        if not isinstance(attn_bias, torch.Tensor):
            raise NotImplementedError(f"xformers bias {type(attn_bias).__name__} on NPU")
        out = torch.nn.functional.scaled_dot_product_attention(
            query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2),
            attn_mask=attn_bias, dropout_p=p, scale=scale,
        )
        return out.transpose(1, 2)
    atten_mask, sparse_mode = None, 0
    if causal:
        atten_mask = torch.triu(torch.ones(2048, 2048, device=query.device), diagonal=1).bool()
        sparse_mode = 2
    return torch_npu.npu_fusion_attention(
        query, key, value, query.shape[2], "BSND",
        atten_mask=atten_mask, scale=scale, keep_prob=1.0 - p, sparse_mode=sparse_mode,
    )[0]
'''

DESCRIPTION = (
    "call npu_memory_efficient_attention, a helper written into this file that runs "
    "torch_npu.npu_fusion_attention (keep_prob = 1 - p; LowerTriangularMask -> causal, "
    "sparse_mode=2); numerics differ slightly and dropout draws different masks"
)


@fixer("xformers-attention")
def xformers_attention(ctx: FixContext, call: ast.Call) -> Draft | None:
    edits = _call_edits(ctx, call)
    if edits is None:
        return None
    edits += helper_edits(ctx, [(NAME, HELPER)], [call], _import_removal(ctx, call))
    return Draft(DESCRIPTION, edits, ["import torch", "import torch_npu"])


def _import_removal(ctx: FixContext, call: ast.Call) -> Edit | None:
    """`import xformers.ops as xops` goes when every use of `xops` is a call this fixer
    rewrites (each such fix carries the same removal, so they apply together)."""
    head = call.func
    while isinstance(head, ast.Attribute):
        head = head.value
    if not isinstance(head, ast.Name):
        return None
    tree = module_tree(ctx.text)
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == head.id]
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and ctx.bindings.qualname_of(n.func) == ctx.qualname
    ]
    for use in uses:
        owner = next((c for c in calls if ctx.span(c)[0] <= ctx.span(use)[0] < ctx.span(c)[1]), None)
        if owner is None or _call_edits(ctx, owner) is None:
            return None
    for stmt in ast.walk(tree):
        if (
            isinstance(stmt, ast.Import)
            and len(stmt.names) == 1
            and (stmt.names[0].asname or stmt.names[0].name.split(".")[0]) == head.id
        ):
            return remove_statement(ctx, tree, stmt)
        if (
            isinstance(stmt, ast.ImportFrom)
            and len(stmt.names) == 1
            and (stmt.names[0].asname or stmt.names[0].name) == head.id
        ):
            return remove_statement(ctx, tree, stmt)
    return None


def _call_edits(ctx: FixContext, call: ast.Call) -> list[Edit] | None:
    bound = bind_args(call, PARAMS)
    if bound is None:
        return None
    if not all(is_const(bound.get(n), None) for n in ("op", "output_dtype") if n in bound):
        return None
    edits = [ctx.replace(call.func, NAME)]
    bias = bound.get("attn_bias")
    if isinstance(bias, ast.Call | ast.Attribute | ast.Name):
        qual = ctx.bindings.qualname_of(bias.func if isinstance(bias, ast.Call) else bias) or ""
        if qual.startswith("xformers"):
            if not (
                qual.endswith(".LowerTriangularMask")
                and isinstance(bias, ast.Call)
                and not bias.args
                and not bias.keywords
            ):
                return None
            kw = next((k for k in call.keywords if k.arg == "attn_bias"), None)
            if kw is not None:
                edits.append(ctx.replace(kw, "causal=True"))
            else:
                edits.append(ctx.replace(bias, "None"))
                end = ctx.span(call)[1] - 1  # before the closing parenthesis
                last = (call.args + [k.value for k in call.keywords])[-1]
                last_end = ctx.span(last)[1]
                if ctx.text[last_end:end].strip() not in ("", ","):
                    return None
                edits.append(Edit(last_end, last_end, ", causal=True"))
    return edits
