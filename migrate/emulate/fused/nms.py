"""torch_npu.npu_nms_with_mask and npu_batch_nms, the NMS ops of Ascend ModelZoo's detection
models (detectron2, R-FCN, YOLO ports), with the signatures and semantics of torch_npu
2.14.0's op documentation (torch_npu/_op_plugin_docs.py):

* ``npu_nms_with_mask(input, iou_threshold)``: ``input`` rows are ``[x0, y0, x1, y1, score,
  ...]`` (8 columns in the documentation, 5 in the ModelZoo callers); the rows sorted by
  decreasing score (the first five columns), their positions in the input (int32) and a
  uint8 mask that is 1 where a row is kept: a row is dropped when its IoU with a kept row of
  higher score exceeds the threshold;
* ``npu_batch_nms(boxes, scores, score_threshold, iou_threshold, max_size_per_class,
  max_total_size, ...)``: TensorFlow's combined non-max suppression: per image and class,
  boxes scoring above the threshold, NMS, at most ``max_size_per_class``; then the image's
  selections by decreasing score, at most ``max_total_size``, zero-padded; boxes
  ``[B, N, q, 4]`` (q = 1: shared by every class, or one per class), scores ``[B, N, C]``.
  At most N x C rows can be selected; ``max_total_size`` may pad beyond that with zero rows
  up to ``PAD_ROWS`` (65536), and above both it is refused (the zeros would only fill memory).
"""

from __future__ import annotations

import torch

from migrate.emulate.fused import fused_op
from migrate.emulate.fused.detection import box_iou

PAD_ROWS = 1 << 16  # npu_batch_nms: max_total_size may exceed N x C (zero rows) up to this


def _greedy(boxes: torch.Tensor, scores: torch.Tensor, iou: float, limit: int | None = None) -> list[int]:
    """Indices kept by greedy NMS, by decreasing score (ties: the earlier box first)."""
    order = torch.argsort(scores, descending=True, stable=True).tolist()
    alive = torch.ones(boxes.shape[0], dtype=torch.bool)
    kept: list[int] = []
    for i in order:
        if limit is not None and len(kept) >= limit:
            break
        if bool(alive[i]):
            kept.append(i)
            alive &= box_iou(boxes[i], boxes) <= iou
    return kept


@fused_op("npu_nms_with_mask")
def npu_nms_with_mask(input, iou_threshold):
    """(selected_boxes [N, 5], selected_idx int32 [N], selected_mask uint8 [N]): the rows of
    ``input`` ([x0, y0, x1, y1, score, ...]) by decreasing score, their input positions, and 1
    where a row is kept by greedy NMS (IoU above ``iou_threshold`` with a kept row drops it)."""
    if input.dim() != 2 or input.shape[1] < 5:
        raise ValueError(f"npu_nms_with_mask: expects [N, 5..8] boxes with scores, got {tuple(input.shape)}")
    rows = input.detach().float().cpu()
    order = torch.argsort(rows[:, 4], descending=True, stable=True)
    ranked = rows[order]
    kept = _greedy(ranked[:, :4], ranked[:, 4], float(iou_threshold))
    mask = torch.zeros(rows.shape[0], dtype=torch.uint8)
    mask[kept] = 1
    device = input.device
    return input[order.to(device), :5], order.to(torch.int32).to(device), mask.to(device)


def _boxes_per_class(boxes: torch.Tensor, transpose_box: bool) -> torch.Tensor:
    """``boxes`` as [B, N, q, 4] (given [B, N, 4] or [B, N, q, 4]; with ``transpose_box`` the
    coordinates come before the anchors: [B, 4, N] or [B, q, 4, N])."""
    if transpose_box:
        boxes = boxes.transpose(-1, -2) if boxes.dim() == 3 else boxes.permute(0, 3, 1, 2)
    if boxes.dim() == 3:
        boxes = boxes.unsqueeze(2)
    if boxes.dim() != 4 or boxes.shape[-1] != 4:
        raise ValueError(f"npu_batch_nms: boxes must be [B, N, q, 4], got {tuple(boxes.shape)}")
    return boxes


def _one_image(boxes, scores, floor: float, iou: float, per_class: int) -> list[tuple[float, int, int]]:
    """(score, class, anchor) of every box one image keeps, best first."""
    picked: list[tuple[float, int, int]] = []
    for c in range(scores.shape[1]):
        candidates = torch.nonzero(scores[:, c] > floor).flatten()
        if candidates.numel() == 0:
            continue
        own = boxes[candidates, c if boxes.shape[1] > 1 else 0]
        for i in _greedy(own, scores[candidates, c], iou, per_class):
            anchor = int(candidates[i])
            picked.append((float(scores[anchor, c]), c, anchor))
    picked.sort(key=lambda p: -p[0])  # stable: a tie keeps class order
    return picked


@fused_op("npu_batch_nms")
def npu_batch_nms(
    self,
    scores,
    score_threshold,
    iou_threshold,
    max_size_per_class,
    max_total_size,
    change_coordinate_frame=False,
    transpose_box=False,
):
    """(nmsed_boxes [B, T, 4], nmsed_scores [B, T], nmsed_classes [B, T], nmsed_num int32
    [B]), T = ``max_total_size``: per image and class the boxes scoring above
    ``score_threshold``, greedy NMS, at most ``max_size_per_class``; then the image's best T
    by score, rows past ``nmsed_num`` zero (TensorFlow's combined non-max suppression). A T
    above both N x C and ``PAD_ROWS`` (65536) is refused: it could only add zero rows."""
    if change_coordinate_frame:
        raise ValueError(
            "npu_batch_nms: change_coordinate_frame=True is not emulated (it normalises to a clip "
            "window torch_npu's signature does not take)"
        )
    boxes = _boxes_per_class(self.detach().float().cpu(), bool(transpose_box))
    values = scores.detach().float().cpu()
    if values.dim() != 3 or values.shape[:2] != boxes.shape[:2] or boxes.shape[2] not in (1, values.shape[2]):
        raise ValueError(
            f"npu_batch_nms: scores must be [B, N, C] beside boxes [B, N, q, 4] (q 1 or C), got "
            f"{tuple(values.shape)} and {tuple(boxes.shape)}"
        )
    total = int(max_total_size)
    if total < 0 or int(max_size_per_class) < 0:
        raise ValueError(
            f"npu_batch_nms: max_size_per_class and max_total_size must be >= 0, got "
            f"{int(max_size_per_class)} and {total}"
        )
    limit = max(boxes.shape[1] * values.shape[2], PAD_ROWS)
    if total > limit:
        raise ValueError(
            f"npu_batch_nms: max_total_size {total} exceeds {limit}, the larger of boxes x classes "
            f"({boxes.shape[1]} x {values.shape[2]}) and {PAD_ROWS}: rows past those are only zeros"
        )
    out_boxes = torch.zeros(boxes.shape[0], total, 4)
    out_scores = torch.zeros(boxes.shape[0], total)
    out_classes = torch.zeros(boxes.shape[0], total)
    counts = torch.zeros(boxes.shape[0], dtype=torch.int32)
    args = (float(score_threshold), float(iou_threshold), int(max_size_per_class))
    for b in range(boxes.shape[0]):
        picked = _one_image(boxes[b], values[b], *args)[:total]
        for row, (score, c, anchor) in enumerate(picked):
            out_boxes[b, row] = boxes[b, anchor, c if boxes.shape[2] > 1 else 0]
            out_scores[b, row], out_classes[b, row] = score, c
        counts[b] = len(picked)
    device = self.device
    return (
        out_boxes.to(self.dtype).to(device),
        out_scores.to(scores.dtype).to(device),
        out_classes.to(scores.dtype).to(device),
        counts.to(device),
    )
