"""The torch_npu operators ModelZoo scripts use next most (migrate/emulate/fused/modelzoo.py,
boxes.py; torch.npu.utils' overflow check): each against the op documentation's example
(torch_npu 2.14.0's _op_plugin_docs.py, values copied from it) and an independent formula.
They are plain PyTorch, so they run here on CPU tensors without the emulated device."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from migrate.emulate import device  # noqa: E402
from migrate.emulate.fused import FUSED  # noqa: E402


def test_fast_gelu_gives_the_documented_example_and_its_gradient():
    x = torch.tensor([0.5991, 0.4094])
    assert torch.allclose(FUSED["fast_gelu"](x), torch.tensor([0.4403, 0.2733]), atol=1e-4)
    y = torch.linspace(-6, 6, 101, requires_grad=True)
    FUSED["fast_gelu"](y).sum().backward()
    s = torch.sigmoid(1.702 * y.detach())
    assert torch.allclose(y.grad, s + 1.702 * y.detach() * s * (1 - s), atol=1e-6)
    # an approximation of the exact gelu, not the exact one
    err = (FUSED["fast_gelu"](y.detach()) - F.gelu(y.detach())).abs().max()
    assert 1e-3 < err < 0.03


def test_npu_linear_and_bmm_v2_are_the_documented_products():
    g = torch.Generator().manual_seed(0)
    x, w, b = torch.rand(2, 16, generator=g), torch.rand(4, 16, generator=g), torch.rand(4, generator=g)
    out = FUSED["npu_linear"](x, w, b)
    assert out.shape == (2, 4)
    assert torch.allclose(out, torch.einsum("mk,nk->mn", x, w) + b, atol=1e-6)
    with pytest.raises(ValueError):
        FUSED["npu_linear"](x[None], w)
    m1, m2 = torch.randn(10, 3, 4, generator=g), torch.randn(10, 4, 5, generator=g)
    res = FUSED["npu_bmmV2"](m1, m2, [])
    assert res.shape == (10, 3, 5)
    assert torch.allclose(res, torch.stack([a @ c for a, c in zip(m1, m2)]), atol=1e-6)


def test_format_cast_keeps_values_shape_and_gradient():
    x = torch.rand(2, 3, 4, 5, requires_grad=True)
    y = FUSED["npu_format_cast"](x, 29)
    assert y.shape == x.shape and torch.equal(y, x) and y.data_ptr() != x.data_ptr()
    (y * 3).sum().backward()
    assert torch.equal(x.grad, torch.full_like(x, 3.0))
    with pytest.raises(TypeError):
        FUSED["npu_format_cast"](x, "NZ")


def test_scaled_masked_softmax_masks_scales_and_keeps_the_dtype():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 32, 32, generator=g).half()
    mask = torch.rand(2, 1, 32, 32, generator=g) > 0.7
    out = FUSED["npu_scaled_masked_softmax"](x, mask, 0.5)
    assert out.dtype == torch.float16
    ref = torch.softmax(torch.where(mask, -math.inf, x.float() * 0.5), dim=-1)
    assert torch.allclose(out.float(), ref, atol=1e-3)
    assert torch.all(out[mask.expand_as(out)] == 0)
    tri = FUSED["npu_scaled_masked_softmax"](x.float(), torch.zeros(32, 32, dtype=torch.bool), 1.0, True)
    causal = torch.ones(32, 32, dtype=torch.bool).tril()
    assert torch.allclose(tri, torch.softmax(x.float().masked_fill(~causal, -math.inf), -1), atol=1e-6)
    full = FUSED["npu_scaled_masked_softmax"](x.float(), torch.ones(32, 32, dtype=torch.bool))
    assert torch.allclose(full, torch.full_like(full, 1 / 32))


def test_bounding_box_encode_gives_the_documented_example():
    anchors = torch.tensor([[1.0, 2.0, 3.0, 4.0], [3.0, 4.0, 5.0, 6.0]])
    gt = torch.tensor([[5.0, 6.0, 7.0, 8.0], [7.0, 8.0, 9.0, 6.0]])
    out = FUSED["npu_bounding_box_encode"](anchors, gt, 0, 0, 0, 0, 0.1, 0.1, 0.2, 0.2)
    documented = torch.tensor([[13.3281, 13.3281, 0.0, 0.0], [13.3281, 6.6641, 0.0, -5.4922]])
    assert torch.allclose(out, documented, atol=1e-2)


def test_bounding_box_decode_gives_the_documented_example_and_inverts_encode():
    rois = torch.tensor([[1.0, 2.0, 3.0, 4.0], [3.0, 4.0, 5.0, 6.0]])
    deltas = torch.tensor([[5.0, 6.0, 7.0, 8.0], [7.0, 8.0, 9.0, 6.0]])
    out = FUSED["npu_bounding_box_decode"](rois, deltas, 0, 0, 0, 0, 1, 1, 1, 1, (10, 10), 0.1)
    documented = torch.tensor([[2.5, 6.5, 9.0, 9.0], [9.0, 9.0, 9.0, 9.0]])
    assert torch.allclose(out, documented, atol=1e-4)
    g = torch.Generator().manual_seed(2)
    xy = torch.rand(50, 2, generator=g) * 100
    anchors = torch.cat([xy, xy + 1 + torch.rand(50, 2, generator=g) * 50], 1)
    xy = torch.rand(50, 2, generator=g) * 100
    boxes = torch.cat([xy, xy + 1 + torch.rand(50, 2, generator=g) * 50], 1)
    means, stds = (0.1, -0.1, 0.0, 0.2), (0.1, 0.1, 0.2, 0.2)
    enc = FUSED["npu_bounding_box_encode"](anchors, boxes, *means, *stds)
    dec = FUSED["npu_bounding_box_decode"](anchors, enc, *means, *stds, (1000, 1000), 16 / 1000)
    assert torch.allclose(dec, boxes, atol=1e-3)


def test_overflow_check_follows_the_wheels_inf_nan_path():
    assert device.is_support_inf_nan() is True
    assert device.npu_check_overflow(0.0) is False
    assert device.npu_check_overflow(float("inf")) is True
    assert device.npu_check_overflow(torch.tensor([1.0, float("nan")])) is True
    assert (
        device.npu_check_overflow(torch.tensor([3e38, 3e38], dtype=torch.float32)) is True
    )  # the sum overflows
    assert device.npu_check_overflow(torch.ones(4, dtype=torch.float16)) is False
    with pytest.raises(RuntimeError):
        device.npu_check_overflow("0")
