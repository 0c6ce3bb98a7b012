"""torch_npu.npu_nms_v4 and npu_roi_align, the detection ops torchvision's ``nms`` and
``roi_align`` map to on the device, with the signatures of torch_npu 2.14.0's op schemas and
the semantics of its op documentation (torch_npu/_op_plugin_docs.py): NMS v4 is TensorFlow's
NonMaxSuppressionV4 (boxes by decreasing score, a box dropped when its IoU with a kept one
exceeds the threshold or its score does not exceed the score threshold, at most
``max_output_size`` kept, int32 indices and their count); ROIAlign averages bilinear samples
per bin (``rois`` rows are ``[batch index, x0, y0, x1, y1]``)."""

from __future__ import annotations

import math

import torch

from migrate.emulate.fused import fused_op


def box_iou(box: torch.Tensor, boxes: torch.Tensor) -> torch.Tensor:
    """IoU of ``box`` with each of ``boxes``; corners in either order (TensorFlow's)."""
    lo = torch.minimum(box[:2], box[2:]), torch.minimum(boxes[:, :2], boxes[:, 2:])
    hi = torch.maximum(box[:2], box[2:]), torch.maximum(boxes[:, :2], boxes[:, 2:])
    inter = (torch.minimum(hi[0], hi[1]) - torch.maximum(lo[0], lo[1])).clamp(min=0).prod(-1)
    areas = (hi[0] - lo[0]).prod(-1), (hi[1] - lo[1]).prod(-1)
    union = areas[0] + areas[1] - inter
    return torch.where(union > 0, inter / union, torch.zeros_like(union))


@fused_op("npu_nms_v4")
def npu_nms_v4(self, scores, max_output_size, iou_threshold, scores_threshold, pad_to_max_output_size=False):
    """(selected_indices int32 [M], valid_outputs int32 0-d): greedy NMS of ``self`` ([N, 4]
    boxes) by decreasing score; with ``pad_to_max_output_size`` the indices are padded with
    zeros to ``max_output_size``."""
    limit = int(max_output_size)
    iou, floor = float(iou_threshold), float(scores_threshold)
    boxes, values = self.detach().float(), scores.detach().float()
    order = torch.argsort(values, descending=True, stable=True)
    kept: list[int] = []
    alive = torch.ones(boxes.shape[0], dtype=torch.bool, device=boxes.device)
    for i in order.tolist():
        if len(kept) >= limit:
            break
        if not bool(alive[i]) or not float(values[i]) > floor:
            continue
        kept.append(i)
        alive &= box_iou(boxes[i], boxes) <= iou
    selected = torch.tensor(kept, dtype=torch.int32).to(self.device)
    count = torch.tensor(len(kept), dtype=torch.int32).to(self.device)
    if pad_to_max_output_size and len(kept) < limit:
        selected = torch.cat([selected, torch.zeros(limit - len(kept), dtype=torch.int32).to(self.device)])
    return selected, count


ROI_END_MODES = {0: False, 3: True}  # torch_npu.contrib's ROIAlign: aligned -> 3, else 0


def _bilinear(image: torch.Tensor, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``image`` [C, H, W] sampled at (y[i], x[j]) -> [C, len(y), len(x)]; samples outside
    (-1, H) x (-1, W) are 0, coordinates below 0 count as 0 (the usual ROIAlign rule)."""
    height, width = image.shape[-2:]
    inside = ((y > -1) & (y < height))[:, None] & ((x > -1) & (x < width))[None, :]
    y, x = y.clamp(min=0), x.clamp(min=0)
    y0, x0 = y.floor().long().clamp(max=height - 1), x.floor().long().clamp(max=width - 1)
    y1, x1 = (y0 + 1).clamp(max=height - 1), (x0 + 1).clamp(max=width - 1)
    y = torch.where(y0 >= height - 1, y0.to(y.dtype), y)
    x = torch.where(x0 >= width - 1, x0.to(x.dtype), x)
    ly, lx = (y - y0)[:, None], (x - x0)[None, :]
    hy, hx = 1 - ly, 1 - lx
    out = (
        hy * hx * image[:, y0][:, :, x0]
        + hy * lx * image[:, y0][:, :, x1]
        + ly * hx * image[:, y1][:, :, x0]
        + ly * lx * image[:, y1][:, :, x1]
    )
    return out * inside


def _one_roi(image, roi, scale, pooled, sample_num, aligned):
    offset = 0.5 if aligned else 0.0
    x0, y0, x1, y1 = (float(v) * scale - offset for v in roi[1:].tolist())
    height, width = y1 - y0, x1 - x0
    if not aligned:
        height, width = max(height, 1.0), max(width, 1.0)
    bin_h, bin_w = height / pooled[0], width / pooled[1]
    grid_h = sample_num if sample_num > 0 else math.ceil(height / pooled[0])
    grid_w = sample_num if sample_num > 0 else math.ceil(width / pooled[1])
    steps = {"dtype": image.dtype, "device": image.device}
    ys = y0 + bin_h * (torch.arange(pooled[0] * grid_h, **steps) + 0.5) / grid_h
    xs = x0 + bin_w * (torch.arange(pooled[1] * grid_w, **steps) + 0.5) / grid_w
    samples = _bilinear(image, ys, xs)  # [C, PH * gh, PW * gw]
    channels = samples.shape[0]
    return samples.reshape(channels, pooled[0], grid_h, pooled[1], grid_w).mean(dim=(2, 4))


@fused_op("npu_roi_align")
def npu_roi_align(self, rois, spatial_scale, pooled_height, pooled_width, sample_num, roi_end_mode):
    """[K, C, pooled_height, pooled_width] features of ``rois`` ([K, 5]) on ``self``
    ([N, C, H, W]); ``sample_num`` samples per bin side (0: ceil(roi size / bins));
    ``roi_end_mode`` 0 is Detectron's legacy alignment (a roi at least 1 pixel), 3 the
    half-pixel one (torch_npu.contrib's ROIAlign maps ``aligned`` to these two; the
    documentation gives no other mode's meaning, so no other is emulated)."""
    if roi_end_mode not in ROI_END_MODES:
        raise ValueError(
            f"npu_roi_align: roi_end_mode {roi_end_mode} is not emulated (torch_npu documents "
            "none; its contrib ROIAlign uses 0 for aligned=False and 3 for aligned=True)"
        )
    pooled = (int(pooled_height), int(pooled_width))
    outs = [
        _one_roi(
            self[int(roi[0])], roi, float(spatial_scale), pooled, int(sample_num), ROI_END_MODES[roi_end_mode]
        )
        for roi in rois.detach().cpu()
    ]
    if not outs:
        return self.new_zeros((0, self.shape[1], *pooled))
    return torch.stack(outs)
