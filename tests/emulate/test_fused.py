"""Reference implementations of torch_npu's fused ops, each against an independent formula
(SDPA with masks built another way, torch's RMSNorm, complex-number rotation, ...). They
are plain PyTorch, so they run here on CPU tensors without the emulated device."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from migrate.emulate.fused import FUSED  # noqa: E402
from migrate.emulate.optim import NpuFusedAdam, NpuFusedAdamW, NpuFusedLamb, NpuFusedSGD  # noqa: E402

fa = FUSED["npu_fusion_attention"]
TRIU = torch.triu(torch.ones(2048, 2048), diagonal=1).bool()


def sdpa(q, k, v, mask=None, scale=None):
    """(B, N, S, D) attention by SDPA; mask True = masked (inverted for SDPA)."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else ~mask, scale=scale)


def qkv(b=2, n=4, sq=6, skv=6, d=8, nkv=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(b, n, sq, d, generator=g),
        torch.randn(b, nkv or n, skv, d, generator=g),
        torch.randn(b, nkv or n, skv, d, generator=g),
    )


@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH", "SBH"])
def test_layouts_match_sdpa(layout):
    q, k, v = qkv()
    b, n, s, d = q.shape
    conv = {
        "BNSD": lambda x: x,
        "BSND": lambda x: x.transpose(1, 2),
        "BSH": lambda x: x.transpose(1, 2).reshape(b, x.shape[2], -1),
        "SBH": lambda x: x.permute(2, 0, 1, 3).reshape(x.shape[2], b, -1),
    }[layout]
    out = fa(conv(q), conv(k), conv(v), n, layout, scale=0.3)[0]
    torch.testing.assert_close(out, conv(sdpa(q, k, v, scale=0.3)))


def test_causal_modes():
    q, k, v = qkv(sq=4, skv=7)
    top_left = torch.ones(4, 7).tril().logical_not()  # j > i
    bottom_right = torch.ones(4, 7).tril(diagonal=3).logical_not()  # j > i + (Skv - Sq)
    for mode, mask in ((2, top_left), (3, bottom_right)):
        out = fa(q, k, v, 4, "BNSD", atten_mask=TRIU, scale=0.5, sparse_mode=mode)[0]
        torch.testing.assert_close(out, sdpa(q, k, v, mask, scale=0.5))
    explicit = fa(q, k, v, 4, "BNSD", atten_mask=bottom_right, scale=0.5, sparse_mode=0)[0]
    torch.testing.assert_close(explicit, sdpa(q, k, v, bottom_right, scale=0.5))
    assert torch.allclose(
        fa(q, k, v, 4, "BNSD", scale=0.5, sparse_mode=3)[0], sdpa(q, k, v, scale=0.5)
    )  # no mask given: full attention


def test_band_and_tockens():
    q, k, v = qkv(sq=6, skv=6)
    i, j = torch.arange(6)[:, None], torch.arange(6)[None, :]
    band = (j - i > 1) | (i - j > 2)
    out = fa(q, k, v, 4, "BNSD", atten_mask=TRIU, scale=1.0, sparse_mode=4, pre_tockens=2, next_tockens=1)[0]
    torch.testing.assert_close(out, sdpa(q, k, v, band, scale=1.0))
    out0 = fa(
        q,
        k,
        v,
        4,
        "BNSD",
        atten_mask=torch.zeros(6, 6, dtype=torch.bool),
        scale=1.0,
        pre_tockens=2,
        next_tockens=1,
    )[0]
    torch.testing.assert_close(out0, sdpa(q, k, v, band, scale=1.0))


def test_gqa_pse_and_scale_order():
    q, k, v = qkv(n=4, nkv=2)
    pse = torch.randn(1, 4, 6, 6)
    out = fa(q, k, v, 4, "BNSD", pse=pse, scale=0.25)[0]
    kk, vv = k.repeat_interleave(2, 1), v.repeat_interleave(2, 1)
    probs = torch.softmax(0.25 * (pse + q @ kk.transpose(-1, -2)), dim=-1)  # documented order
    torch.testing.assert_close(out, probs @ vv)


def test_tnd_varlen_per_sequence():
    g = torch.Generator().manual_seed(1)
    lens = [3, 5, 2]
    q, k, v = (torch.randn(sum(lens), 2, 8, generator=g) for _ in range(3))
    cu = [3, 8, 10]
    out = fa(
        q, k, v, 2, "TND", atten_mask=TRIU, scale=0.4, actual_seq_qlen=cu, actual_seq_kvlen=cu, sparse_mode=3
    )[0]
    start = 0
    for n in lens:
        sl = slice(start, start + n)
        ref = F.scaled_dot_product_attention(
            *(t[sl].transpose(0, 1) for t in (q, k, v)), is_causal=True, scale=0.4
        ).transpose(0, 1)
        torch.testing.assert_close(out[sl], ref)
        start += n


def test_keep_prob_and_outputs():
    q, k, v = qkv()
    torch.manual_seed(0)
    res = fa(q, k, v, 4, "BNSD", scale=0.3, keep_prob=0.5)
    assert len(res) == 7 and res[1].shape == (2, 4, 6, 8) and res[1].dtype == torch.float32
    assert not torch.allclose(res[0], sdpa(q, k, v, scale=0.3))  # dropout applied
    with pytest.raises(ValueError, match="keep_prob"):
        fa(q, k, v, 4, "BNSD", keep_prob=0.0)
    fully = torch.ones(6, 6, dtype=torch.bool)
    assert torch.count_nonzero(fa(q, k, v, 4, "BNSD", atten_mask=fully)[0]) == 0


def test_rms_norm_rotary_swiglu_confusion():
    g = torch.Generator().manual_seed(2)
    x, w = torch.randn(3, 5, 16, generator=g), torch.randn(16, generator=g)
    y, rstd = FUSED["npu_rms_norm"](x, w, epsilon=1e-5)
    torch.testing.assert_close(y, F.rms_norm(x, (16,), w, eps=1e-5))
    assert rstd.shape == (3, 5, 1)

    t = torch.randn(2, 7, 3, 8, generator=g)
    ang = torch.randn(1, 7, 1, 4, generator=g)
    cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)
    half = FUSED["npu_rotary_mul"](t, cos, sin)
    rot = torch.view_as_complex(torch.stack(t.chunk(2, -1), -1).contiguous()) * torch.polar(
        torch.ones_like(ang), ang
    )
    torch.testing.assert_close(half, torch.cat([rot.real, rot.imag], -1))
    cos_i, sin_i = ang.cos().repeat_interleave(2, -1), ang.sin().repeat_interleave(2, -1)
    inter = FUSED["npu_rotary_mul"](t, cos_i, sin_i, rotary_mode="interleave")
    rot_i = torch.view_as_complex(t.reshape(2, 7, 3, 4, 2).contiguous()) * torch.polar(
        torch.ones_like(ang), ang
    )
    torch.testing.assert_close(inter, torch.view_as_real(rot_i).flatten(-2))

    a = torch.randn(4, 10, generator=g)
    torch.testing.assert_close(FUSED["npu_swiglu"](a), a[:, :5] * torch.sigmoid(a[:, :5]) * a[:, 5:])
    x4 = torch.rand(2, 3, 4, 6)
    ct = FUSED["npu_confusion_transpose"]
    assert ct(x4, (0, 2, 1, 3), (2, 4, 18), True).shape == (2, 4, 18)
    assert ct(x4, (0, 2, 1), (2, 12, 6), False).shape == (2, 6, 12)


def _params(seed=3):
    g = torch.Generator().manual_seed(seed)
    p = torch.nn.Parameter(torch.randn(5, 4, generator=g))
    p.grad = torch.randn(5, 4, generator=g)
    return p


def test_fused_adam_adamw_sgd_and_lamb_formula():
    p, q = _params(), _params()
    NpuFusedAdamW([p], lr=0.1).step()
    torch.optim.AdamW([q], lr=0.1, weight_decay=1e-2).step()
    torch.testing.assert_close(p, q)
    p, before = _params(), _params()
    NpuFusedAdam([p], lr=0.1, weight_decay=0.1).step()
    g = before.grad + 0.1 * before.detach()  # L2 decay folded into the gradient
    m, v = 0.1 * g / 0.1, 0.001 * g * g / 0.001  # bias-corrected first step
    torch.testing.assert_close(p.detach(), before.detach() - 0.1 * m / (v.sqrt() + 1e-8))
    p, before = _params(), _params()
    opt = NpuFusedSGD([p], lr=0.1, momentum=0.9)
    opt.step()
    p.grad = before.grad.clone()
    opt.step()  # momentum buffer: g, then 0.9 g + g
    torch.testing.assert_close(p.detach(), before.detach() - 0.1 * before.grad - 0.1 * 1.9 * before.grad)
    p = _params()
    before, grad = p.detach().clone(), p.grad.clone()
    NpuFusedLamb([p], lr=0.1, weight_decay=0.01).step()
    m, v = 0.1 * grad, 0.001 * grad * grad  # first step, no bias correction
    u = m / (v.sqrt() + 1e-6) + 0.01 * before
    trust = before.norm().clamp(0, 10) / u.norm()
    torch.testing.assert_close(p.detach(), before - 0.1 * trust * u)


def test_registered_names_are_public_custom_ops():
    from migrate.emulate.data import surface

    assert set(FUSED) >= {
        "npu_fusion_attention",
        "npu_rms_norm",
        "npu_rotary_mul",
        "npu_swiglu",
        "npu_confusion_transpose",
    }
    assert set(FUSED) <= set(surface().custom_ops)


def test_prefix_mode_and_varlen_band_split():
    q, k, v = qkv(b=2, sq=4, skv=6)
    prefix = [1, 3]
    mask = torch.zeros(2, 1, 4, 6, dtype=torch.bool)
    for b, n in enumerate(prefix):  # bottom-right causal, the first n columns always seen
        for i in range(4):
            for j in range(6):
                mask[b, 0, i, j] = j > i + 2 and j >= n
    out = fa(q, k, v, 4, "BNSD", atten_mask=TRIU, scale=0.5, sparse_mode=6, prefix=prefix)[0]
    torch.testing.assert_close(out, sdpa(q, k, v, mask, scale=0.5))
    # sparse_mode 7: earlier sequences bottom-right causal, the last one a band
    g = torch.Generator().manual_seed(4)
    qt, kt, vt = (torch.randn(7, 2, 8, generator=g) for _ in range(3))
    out7 = fa(
        qt,
        kt,
        vt,
        2,
        "TND",
        atten_mask=TRIU,
        scale=0.5,
        sparse_mode=7,
        pre_tockens=1,
        next_tockens=0,
        actual_seq_qlen=[3, 7],
        actual_seq_kvlen=[3, 7],
    )[0]
    first = F.scaled_dot_product_attention(
        *(t[:3].transpose(0, 1) for t in (qt, kt, vt)), is_causal=True, scale=0.5
    ).transpose(0, 1)
    i, j = torch.arange(4)[:, None], torch.arange(4)[None, :]
    band = (j > i) | (j < i - 1)
    last = F.scaled_dot_product_attention(
        *(t[3:].transpose(0, 1) for t in (qt, kt, vt)), attn_mask=~band, scale=0.5
    ).transpose(0, 1)
    torch.testing.assert_close(out7, torch.cat([first, last]))


def test_roi_align_gives_the_documented_example():
    # torch_npu/_op_plugin_docs.py's npu_roi_align example, output included
    x = torch.arange(1, 37.0).reshape(1, 1, 6, 6)
    out = FUSED["npu_roi_align"].reference(x, torch.tensor([[0, -2.0, -2.0, 22.0, 22.0]]), 0.25, 3, 3, 2, 0)
    want = torch.tensor([[4.5, 6.5, 8.5], [16.5, 18.5, 20.5], [28.5, 30.5, 32.5]])
    torch.testing.assert_close(out, want.reshape(1, 1, 3, 3))
    with pytest.raises(ValueError, match="roi_end_mode 1 is not emulated"):
        FUSED["npu_roi_align"].reference(x, torch.tensor([[0, 0, 0, 2.0, 2.0]]), 1.0, 1, 1, 2, 1)


def test_nms_v4_limits_thresholds_and_pads():
    nms = FUSED["npu_nms_v4"].reference
    # two overlapping boxes (IoU 0.9), one apart; scores 0.9, 0.8, 0.3
    boxes = torch.tensor([[0, 0, 10, 10], [0, 0, 10, 9], [20, 20, 30, 30.0]])
    scores = torch.tensor([0.9, 0.8, 0.3])
    sel, n = nms(boxes, scores, 3, torch.tensor(0.5), torch.tensor(0.0))
    assert sel.tolist() == [0, 2] and int(n) == 2 and sel.dtype == torch.int32
    sel, n = nms(boxes, scores, 3, torch.tensor(0.9), torch.tensor(0.0))  # IoU 0.9 is not exceeded
    assert sel.tolist() == [0, 1, 2]
    sel, n = nms(boxes, scores, 3, torch.tensor(0.5), torch.tensor(0.3))  # score must exceed 0.3
    assert sel.tolist() == [0] and int(n) == 1
    sel, n = nms(boxes, scores, 1, torch.tensor(0.9), torch.tensor(0.0))
    assert sel.tolist() == [0]
    sel, n = nms(boxes, scores, 4, torch.tensor(0.5), torch.tensor(0.0), True)
    assert sel.tolist() == [0, 2, 0, 0] and int(n) == 2
