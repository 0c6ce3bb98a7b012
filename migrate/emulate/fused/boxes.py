"""torch_npu.npu_bounding_box_encode / npu_bounding_box_decode, Faster R-CNN's box coder
(torch_npu.contrib.function's npu_bbox_coder_encode_xyxy2xywh and
npu_bbox_coder_decode_xywh2xyxy call them): deltas between [N, 4] boxes (x1, y1, x2, y2)
in the legacy convention, where a box spans x2 - x1 + 1 pixels. The op documentation's
examples (torch_npu/_op_plugin_docs.py) fix that convention and the clamping."""

from __future__ import annotations

import math

import torch

from migrate.emulate.fused import fused_op


def _centres(boxes):
    w = boxes[:, 2] - boxes[:, 0] + 1.0
    h = boxes[:, 3] - boxes[:, 1] + 1.0
    return boxes[:, 0] + 0.5 * (w - 1.0), boxes[:, 1] + 0.5 * (h - 1.0), w, h


def _check(name: str, a, b) -> None:
    if a.dim() != 2 or a.shape[-1] != 4 or a.shape != b.shape:
        raise ValueError(f"{name}: expects two [N, 4] tensors, got {tuple(a.shape)} and {tuple(b.shape)}")


@fused_op("npu_bounding_box_encode")
def npu_bounding_box_encode(
    anchor_box, ground_truth_box, means0, means1, means2, means3, stds0, stds1, stds2, stds3
):
    """(dx, dy, dw, dh) that move each anchor box onto its ground-truth box: centre offsets
    over the anchor's width and height, log size ratios (of the absolute extents: the
    documentation's example encodes a box with y2 < y1), then (delta - means) / stds."""
    _check("npu_bounding_box_encode", anchor_box, ground_truth_box)
    px, py, pw, ph = _centres(anchor_box.float())
    gx, gy, gw, gh = _centres(ground_truth_box.float())
    deltas = torch.stack(
        [(gx - px) / pw, (gy - py) / ph, torch.log((gw / pw).abs()), torch.log((gh / ph).abs())], dim=-1
    )
    means = torch.tensor([means0, means1, means2, means3], device=deltas.device)
    stds = torch.tensor([stds0, stds1, stds2, stds3], device=deltas.device)
    return ((deltas - means) / stds).to(anchor_box.dtype)


@fused_op("npu_bounding_box_decode")
def npu_bounding_box_decode(
    rois, deltas, means0, means1, means2, means3, stds0, stds1, stds2, stds3, max_shape, wh_ratio_clip
):
    """Boxes from rois and deltas: deltas * stds + means, dw and dh clamped to
    +-|log(wh_ratio_clip)|, the centre moved by (dx, dy) times the roi's size and the size
    scaled by exp(dw, dh); the corners (x1, y1, x2, y2) are clamped to [0, w - 1] and
    [0, h - 1] of ``max_shape`` = (h, w) (the documentation's example)."""
    _check("npu_bounding_box_decode", rois, deltas)
    if len(max_shape) != 2:
        raise ValueError(f"npu_bounding_box_decode: max_shape is (h, w), got {list(max_shape)}")
    means = torch.tensor([means0, means1, means2, means3], device=deltas.device)
    stds = torch.tensor([stds0, stds1, stds2, stds3], device=deltas.device)
    d = deltas.float() * stds + means
    limit = abs(math.log(wh_ratio_clip))
    dw, dh = d[:, 2].clamp(-limit, limit), d[:, 3].clamp(-limit, limit)
    px, py, pw, ph = _centres(rois.float())
    gw, gh = pw * dw.exp(), ph * dh.exp()
    gx, gy = px + pw * d[:, 0], py + ph * d[:, 1]
    h, w = max_shape
    x1 = (gx - gw * 0.5 + 0.5).clamp(0, w - 1)
    y1 = (gy - gh * 0.5 + 0.5).clamp(0, h - 1)
    x2 = (gx + gw * 0.5 - 0.5).clamp(0, w - 1)
    y2 = (gy + gh * 0.5 - 0.5).clamp(0, h - 1)
    return torch.stack([x1, y1, x2, y2], dim=-1).to(rois.dtype)
