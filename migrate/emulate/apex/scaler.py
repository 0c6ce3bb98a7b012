"""apex.amp's LossScaler (NVIDIA apex/amp/scaler.py; Ascend's fork keeps its rules).

A static scale never changes and is never checked for overflow: an inf gradient reaches the
optimizer, as in both apex's. A dynamic one starts at ``min(max_loss_scale, init_scale)``
(2**16); a step whose gradients hold an inf or NaN is skipped and halves the scale (never
below ``min_loss_scale`` when one is given); ``scale_window`` (2000) steps in a row without
overflow double it (never above ``max_loss_scale``, 2**24). Under torch.distributed every
rank skips when any rank overflowed (Ascend's fork all-reduces the overflow count).

The overflow check differs from Ascend's in how it sees an overflow: Ascend's reads the
NPU's float status flag, set by any op that overflowed since ``scale_loss`` began; this one
looks for inf or NaN in the gradients, as NVIDIA's python path does.
"""

from __future__ import annotations

import torch

from migrate.emulate.apex.levels import load


class LossScaler:
    def __init__(
        self,
        loss_scale,
        init_scale: float | None = None,
        scale_factor: float | None = None,
        scale_window: int | None = None,
        min_loss_scale: float | None = None,
        max_loss_scale: float | None = None,
    ):
        dyn = load()[1]
        self._max_loss_scale = dyn.max_loss_scale if max_loss_scale is None else float(max_loss_scale)
        self._min_loss_scale = min_loss_scale
        self._scale_factor = dyn.scale_factor if scale_factor is None else float(scale_factor)
        self._backoff = dyn.backoff
        self._scale_seq_len = dyn.scale_window if scale_window is None else int(scale_window)
        self.dynamic = loss_scale == "dynamic"
        start = dyn.init_scale if init_scale is None else float(init_scale)
        self._loss_scale = min(self._max_loss_scale, start) if self.dynamic else float(loss_scale)
        self._unskipped = 0
        self._has_overflow = False

    def loss_scale(self) -> float:
        return self._loss_scale

    def clear_overflow_state(self) -> None:
        self._has_overflow = False

    def unscale(self, items: list, scale: float | None = None) -> None:
        """``items`` of (new gradient or None, stashed gradient or None, dtype, put): each
        new gradient is unscaled in ``dtype`` (float32 for a master weight), what was already
        accumulated is added, and ``put`` receives the sum. Nothing is put after an overflow:
        the step is skipped and the gradients do not matter."""
        scale = self._loss_scale if scale is None else scale
        grads = [grad for grad, _, _, _ in items if grad is not None]
        if self.dynamic and grads:
            self._has_overflow = _overflowed(grads)
        if self._has_overflow:
            return
        for grad, stashed, dtype, put in items:
            if grad is None:
                put(stashed)
                continue
            new = grad.detach().to(dtype) * (1.0 / scale)
            put(new if stashed is None else new + stashed.to(dtype))

    def update_scale(self) -> bool:
        """apex's update_scale: True when this step is to be skipped."""
        if self._has_overflow and self.dynamic:
            self._loss_scale *= self._backoff
            if self._min_loss_scale:
                self._loss_scale = max(self._min_loss_scale, self._loss_scale)
            self._unskipped = 0
            skip = True
        else:
            self._unskipped += 1
            skip = False
        if self._unskipped == self._scale_seq_len and self.dynamic:
            self._loss_scale = min(self._max_loss_scale, self._loss_scale * self._scale_factor)
            self._unskipped = 0
        return skip


def _overflowed(grads: list) -> bool:
    flag = torch.stack([~torch.isfinite(g).all() for g in grads]).any().float().reshape(1)
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(flag)
    return bool(flag.item())
