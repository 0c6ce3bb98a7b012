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
from migrate.emulate.fused.nms import PAD_ROWS  # noqa: E402


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


def test_nms_with_mask_gives_the_documented_example_and_drops_overlaps():
    # _op_plugin_docs.py's example: two apart boxes, both kept, in score order
    rows = torch.tensor([[0.0, 1.0, 2.0, 3.0, 0.6, 0.5, 0.4, 0.3], [6.0, 7.0, 8.0, 9.0, 0.4, 0.5, 0.6, 0.7]])
    boxes, idx, mask = FUSED["npu_nms_with_mask"](rows, 0.5)
    assert torch.equal(boxes, rows[:, :5]) and idx.tolist() == [0, 1] and mask.tolist() == [1, 1]
    assert idx.dtype == torch.int32 and mask.dtype == torch.uint8
    # unsorted input, the first box overlaps the best one (IoU 0.9) and is dropped
    rows = torch.tensor([[0, 0, 10, 9, 0.8], [20, 20, 30, 30, 0.3], [0, 0, 10, 10, 0.9]])
    boxes, idx, mask = FUSED["npu_nms_with_mask"](rows, 0.5)
    assert idx.tolist() == [2, 0, 1] and mask.tolist() == [1, 0, 1]
    assert torch.equal(boxes, rows[[2, 0, 1]])
    assert FUSED["npu_nms_with_mask"](rows, 0.95)[2].tolist() == [1, 1, 1]  # 0.9 does not exceed it


def test_batch_nms_is_per_class_nms_then_the_best_of_the_image():
    nms = FUSED["npu_batch_nms"]
    boxes = torch.tensor([[0, 0, 10, 10], [0, 0, 10, 9], [20, 20, 30, 30.0]]).view(1, 3, 1, 4)
    # class 0 likes the two overlapping boxes, class 1 the third
    scores = torch.tensor([[[0.9, 0.1], [0.8, 0.05], [0.05, 0.7]]])
    out_boxes, out_scores, out_classes, num = nms(boxes, scores, 0.2, 0.5, 5, 4)
    assert num.tolist() == [2] and num.dtype == torch.int32
    torch.testing.assert_close(out_scores, torch.tensor([[0.9, 0.7, 0.0, 0.0]]))
    assert out_classes.tolist() == [[0.0, 1.0, 0.0, 0.0]]
    assert torch.equal(out_boxes[0, :2], boxes[0, [0, 2], 0]) and not out_boxes[0, 2:].any()
    # the overlap survives a looser IoU; max_size_per_class and max_total_size cut
    assert nms(boxes, scores, 0.2, 0.95, 5, 4)[3].tolist() == [3]
    assert nms(boxes, scores, 0.2, 0.95, 1, 4)[3].tolist() == [2]
    torch.testing.assert_close(nms(boxes, scores, 0.2, 0.95, 5, 1)[1], torch.tensor([[0.9]]))
    # one box per class (q = C), and (4, N) boxes with transpose_box
    per_class = boxes.expand(1, 3, 2, 4).clone()
    per_class[0, 2, 1] = torch.tensor([40, 40, 50, 50.0])
    assert nms(per_class, scores, 0.2, 0.5, 5, 4)[0][0, 1].tolist() == [40, 40, 50, 50]
    flipped = nms(boxes.view(1, 3, 4).transpose(1, 2), scores, 0.2, 0.5, 5, 4, transpose_box=True)
    assert torch.equal(flipped[0], out_boxes)
    with pytest.raises(ValueError, match="change_coordinate_frame"):
        nms(boxes, scores, 0.2, 0.5, 5, 4, True)
    with pytest.raises(ValueError, match="must be >= 0"):
        nms(boxes, scores, 0.2, 0.5, 5, -1)


def test_batch_nms_pads_past_boxes_times_classes_and_refuses_a_size_beyond_its_bound():
    nms = FUSED["npu_batch_nms"]
    boxes = torch.tensor([[0, 0, 10, 10], [20, 20, 30, 30.0]]).view(1, 2, 1, 4)
    scores = torch.tensor([[[0.9, 0.1], [0.05, 0.7]]])
    # 2 boxes x 2 classes: a larger size only pads with zero rows, up to PAD_ROWS
    out_boxes, out_scores, _, num = nms(boxes, scores, 0.2, 0.5, 5, PAD_ROWS)
    assert out_boxes.shape == (1, PAD_ROWS, 4) and num.tolist() == [2]
    assert out_scores[0, :2].tolist() == pytest.approx([0.9, 0.7]) and not out_scores[0, 2:].any()
    # beyond both: one line naming the argument, not torch's allocation error
    for huge in (PAD_ROWS + 1, 10**12):
        with pytest.raises(ValueError, match=r"^npu_batch_nms: max_total_size \d+ exceeds 65536") as err:
            nms(boxes, scores, 0.2, 0.5, 5, huge)
        assert "\n" not in str(err.value)
    # where boxes x classes is larger, the bound is boxes x classes
    many = torch.rand(1, 300, 1, 4).sort(-1).values
    assert nms(many, torch.rand(1, 300, 250), 0.99, 0.5, 1, 300 * 250)[1].shape == (1, 75000)
    with pytest.raises(ValueError, match="exceeds 75000"):
        nms(many, torch.rand(1, 300, 250), 0.99, 0.5, 1, 75001)


def _dcn(x, weight, offset, **kw):
    args = ([3, 3], kw.pop("stride", [1, 1, 1, 1]), kw.pop("padding", [1, 1, 1, 1]))
    return FUSED["npu_deformable_conv2d"].reference(x, weight, offset, kw.pop("bias", None), *args, **kw)


def test_deformable_conv_without_offsets_is_the_convolution_and_moves_with_them():
    g = torch.Generator().manual_seed(0)
    x, w, b = torch.randn(2, 4, 7, 6, generator=g), torch.randn(6, 2, 3, 3, generator=g), torch.randn(6)
    offset = torch.zeros(2, 3 * 2 * 9, 4, 3)
    offset[:, 36:] = 1  # masks
    out, deformed = _dcn(x, w, offset, bias=b, stride=[1, 1, 2, 2], groups=2, deformable_groups=2)
    torch.testing.assert_close(out, F.conv2d(x, w, b, stride=2, padding=1, groups=2), atol=1e-5, rtol=1e-5)
    assert deformed.shape == (2, 4, 4 * 3, 3 * 3)
    # x offsets of +1 (the first 9 channels) sample one pixel to the right: the input moved left
    one = torch.zeros(1, 27, 7, 6)
    one[:, :9], one[:, 18:] = 1, 1
    out, _ = _dcn(x[:1, :2], w[:2], one)
    padded = F.pad(x[:1, :2], (1, 1, 1, 1))
    moved = F.pad(padded[..., 1:], (0, 1))
    torch.testing.assert_close(out, F.conv2d(moved, w[:2]), atol=1e-5, rtol=1e-5)
    # masks of one half halve the output
    half = one.clone()
    half[:, :9], half[:, 18:] = 0, 0.5
    torch.testing.assert_close(_dcn(x[:1, :2], w[:2], half)[0], F.conv2d(x[:1, :2], w[:2], padding=1) / 2)
    with pytest.raises(ValueError, match="offset must be"):
        _dcn(x, w, torch.zeros(2, 27, 3, 3), groups=2)
    with pytest.raises(ValueError, match="must be 4-D"):
        _dcn(x[0], w, offset)
    with pytest.raises(ValueError, match="stride and dilation must be >= 1"):
        _dcn(x, w, offset, stride=[1, 1, 0, 0])


@pytest.mark.pinned_torch
def test_deformable_conv_matches_torchvision_in_contribs_layout():
    ops = pytest.importorskip("torchvision.ops")
    g = torch.Generator().manual_seed(1)
    x, w = torch.randn(2, 4, 7, 6, generator=g), torch.randn(6, 2, 3, 3, generator=g)
    yx = torch.randn(2, 2 * 2 * 9, 4, 3, generator=g) * 1.5  # torchvision, mmcv: (y, x) pairs
    mask = torch.rand(2, 2 * 9, 4, 3, generator=g)
    want = ops.deform_conv2d(x, yx, w, stride=2, padding=1, mask=mask)
    order = torch.tensor(list(range(1, 36, 2)) + list(range(0, 36, 2)))  # contrib's sort_index_for_npu_fp
    offset = torch.cat([yx.index_select(1, order), mask], 1)
    out, _ = _dcn(x, w, offset, stride=[1, 1, 2, 2], groups=2, deformable_groups=2)
    torch.testing.assert_close(out, want, atol=1e-5, rtol=1e-5)
