"""torch_npu.npu_fusion_attention: y = Softmax(Mask(scale * (pse + q k^T), atten_mask)),
dropout with keep_prob, attention = y v; layouts BSH, SBH, BSND, BNSD, TND; GQA (Nq a
multiple of Nkv); sparse_mode 0-8 as the op's documentation (the wheel's
_op_plugin_docs.py) describes them. Rows with every position masked give 0 (the kernel's
invalid-row handling). softmax_max and softmax_sum are returned in float32, broadcast to 8
on the last axis as the kernel does; dropout draws torch's random numbers, not the kernel's
Philox stream, so seed/offset outputs are 0.
"""

from __future__ import annotations

import torch

from migrate.emulate.fused import fused_op

BIG = 2147483647


def to_bnsd(x: torch.Tensor, layout: str, heads: int | None) -> torch.Tensor:
    """BSH/SBH/BSND/BNSD -> (B, N, S, D); ``heads`` is N for the H layouts."""
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(1, 2)
    if layout == "BSH":
        assert heads is not None  # the callers pass the head count for the H layouts
        b, s, h = x.shape
        return x.reshape(b, s, heads, h // heads).transpose(1, 2)
    if layout == "SBH":
        assert heads is not None
        s, b, h = x.shape
        return x.reshape(s, b, heads, h // heads).permute(1, 2, 0, 3)
    raise ValueError(f"npu_fusion_attention: unknown input_layout {layout!r}")


def from_bnsd(x: torch.Tensor, layout: str) -> torch.Tensor:
    b, n, s, d = x.shape
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(1, 2)
    if layout == "BSH":
        return x.transpose(1, 2).reshape(b, s, n * d)
    return x.permute(2, 0, 1, 3).reshape(s, b, n * d)  # SBH


def band(sq: int, skv: int, pre: int, nxt: int, bottom_right: bool, device) -> torch.Tensor:
    """True where masked: outside [i - pre, i + next] (origin top-left or bottom-right)."""
    i = torch.arange(sq, device=device).unsqueeze(1)
    j = torch.arange(skv, device=device).unsqueeze(0)
    off = (skv - sq) if bottom_right else 0
    return (j > i + off + nxt) | (j < i + off - pre)


def build_mask(
    mode: int, given, sq: int, skv: int, pre: int, nxt: int, prefix, device
) -> torch.Tensor | None:
    """The boolean mask (True = masked), broadcastable to (B, N, Sq, Skv), or None."""
    if given is None:
        return None  # documented: no atten_mask means full computation, whatever the mode
    if mode in (0, 1, 5):
        mask = given.bool()
        if mode == 0 and (pre < BIG or nxt < BIG):
            mask = mask | band(sq, skv, pre, nxt, False, device)
        return mask
    if mode == 2:
        return band(sq, skv, BIG, 0, False, device)
    if mode == 3:
        return band(sq, skv, BIG, 0, True, device)
    if mode == 4:
        return band(sq, skv, pre, nxt, True, device)
    if mode == 6:
        causal = band(sq, skv, BIG, 0, True, device)
        cols = torch.arange(skv, device=device)
        keep = torch.stack([cols < int(p) for p in prefix])  # (B, Skv)
        return causal.unsqueeze(0) & ~keep[:, None, :]  # (B, Sq, Skv)
    raise ValueError(
        f"npu_fusion_attention: sparse_mode {mode} is for TND (varlen) only"
        if mode in (7, 8)
        else f"npu_fusion_attention: bad sparse_mode {mode}"
    )


def attend(q, k, v, mask, pse, scale: float, keep_prob: float):
    """(B, N, Sq, D) attention in float32 at least; returns (out, max, sum)."""
    work = torch.promote_types(q.dtype, torch.float32)
    nq, nkv = q.shape[1], k.shape[1]
    if nq % nkv:
        raise ValueError(f"npu_fusion_attention: Nq ({nq}) must be a multiple of Nkv ({nkv})")
    if nq != nkv:
        k = k.repeat_interleave(nq // nkv, dim=1)
        v = v.repeat_interleave(nq // nkv, dim=1)
    scores = torch.matmul(q.to(work), k.to(work).transpose(-1, -2))
    if pse is not None:
        scores = scores + pse.to(work)
    scores = scores * scale
    if mask is not None:
        while mask.dim() < 4:
            mask = mask.unsqueeze(0) if mask.dim() < 3 else mask.unsqueeze(1)
        scores = scores.masked_fill(mask, float("-inf"))
    smax = scores.amax(dim=-1, keepdim=True)
    safe = torch.where(torch.isinf(smax), torch.zeros_like(smax), smax)
    expd = torch.exp(scores - safe)
    ssum = expd.sum(dim=-1, keepdim=True)
    probs = torch.where(ssum > 0, expd / ssum.clamp_min(torch.finfo(work).tiny), torch.zeros_like(expd))
    if keep_prob < 1.0:
        probs = torch.nn.functional.dropout(probs, p=1.0 - keep_prob)
    out = torch.matmul(probs, v.to(work)).to(q.dtype)
    return out, safe, ssum


def _varlen(q, k, v, atten_mask, pse, scale, keep_prob, pre, nxt, qlen, kvlen, mode):
    if qlen is None or kvlen is None:
        raise ValueError("npu_fusion_attention: TND needs actual_seq_qlen and actual_seq_kvlen")
    outs, maxes, sums = [], [], []
    qs = [0, *[int(x) for x in qlen]]
    ks = [0, *[int(x) for x in kvlen]]
    last = len(qlen) - 1
    for b in range(len(qlen)):
        qb = q[qs[b] : qs[b + 1]].transpose(0, 1).unsqueeze(0)  # (1, N, Sq, D)
        kb = k[ks[b] : ks[b + 1]].transpose(0, 1).unsqueeze(0)
        vb = v[ks[b] : ks[b + 1]].transpose(0, 1).unsqueeze(0)
        sq, skv = qb.shape[2], kb.shape[2]
        if sq == 0:
            continue
        if mode == 7:
            sub = 4 if b == last else 3
        elif mode == 8:
            sub = 4 if b == 0 else 2
        else:
            sub = mode
        given = atten_mask
        if sub in (0, 1) and given is not None:
            given = given[:sq, :skv]  # varlen masks are SS (maxSq x maxSkv)
        mask = build_mask(sub, given, sq, skv, pre, nxt, None, q.device)
        out, smax, ssum = attend(qb, kb, vb, mask, pse, scale, keep_prob)
        outs.append(out[0].transpose(0, 1))
        maxes.append(smax[0].transpose(0, 1))
        sums.append(ssum[0].transpose(0, 1))
    cat = (lambda xs: torch.cat(xs, 0)) if outs else (lambda xs: q.new_zeros(0))
    return cat(outs), cat(maxes), cat(sums)


@fused_op("npu_fusion_attention")
def npu_fusion_attention(
    query,
    key,
    value,
    head_num,
    input_layout,
    pse=None,
    padding_mask=None,
    atten_mask=None,
    scale=1.0,
    keep_prob=1.0,
    pre_tockens=BIG,
    next_tockens=BIG,
    inner_precise=0,
    prefix=None,
    actual_seq_qlen=None,
    actual_seq_kvlen=None,
    sparse_mode=0,
    gen_mask_parallel=True,
    sync=False,
    softmax_layout="",
):
    """(attention_out, softmax_max, softmax_sum, ...): softmax(scale * Q K^T + pse, masked) V
    in the documented layouts, sparse modes and keep_prob dropout."""
    if padding_mask is not None:
        raise ValueError("npu_fusion_attention: padding_mask is not supported (documented)")
    if not 0.0 < keep_prob <= 1.0:
        raise ValueError(f"npu_fusion_attention: keep_prob must be in (0, 1], got {keep_prob}")
    if input_layout == "TND":
        out, smax, ssum = _varlen(
            query,
            key,
            value,
            atten_mask,
            pse,
            scale,
            keep_prob,
            pre_tockens,
            next_tockens,
            actual_seq_qlen,
            actual_seq_kvlen,
            sparse_mode,
        )
    else:
        q = to_bnsd(query, input_layout, head_num)
        d = q.shape[-1]
        kv_heads = None if input_layout in ("BSND", "BNSD") else key.shape[-1] // d
        k, v = to_bnsd(key, input_layout, kv_heads), to_bnsd(value, input_layout, kv_heads)
        mask = build_mask(
            sparse_mode, atten_mask, q.shape[2], k.shape[2], pre_tockens, next_tockens, prefix, q.device
        )
        out, smax, ssum = attend(q, k, v, mask, pse, scale, keep_prob)
        out = from_bnsd(out, input_layout)
    smax = smax.float().expand(*smax.shape[:-1], 8)
    ssum = ssum.float().expand(*ssum.shape[:-1], 8)
    return out, smax, ssum, query.new_empty(0), 0, 0, 0
