"""A Pair: reference and target tensors prepared once for every tensor metric."""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any


def norm(t: Any) -> float:
    """L2 norm; float32 accumulation (blocked, accurate to ~1e-7 relative) unless it
    overflows, then float64."""
    import torch

    if not t.numel():
        return 0.0
    n = float(torch.linalg.vector_norm(t))
    if math.isinf(n) and t.dtype != torch.float64:
        n = float(torch.linalg.vector_norm(t, dtype=torch.float64))
    return n


def _flat(t: Any, wide: Any) -> Any:
    import torch

    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    return t.reshape(-1).to(wide)


def extreme(*dtypes: Any) -> float:
    """Half the largest finite value of the narrowest floating dtype given (inf if none):
    a value that large is a mask or a sentinel (``finfo.min`` filling an additive attention
    mask), not a number to measure relative error on."""
    import torch

    tops = [torch.finfo(d).max for d in dtypes if d.is_floating_point]
    return min(tops) / 2 if tops else math.inf


class Pair:
    """Reference ``ref`` and target ``tgt`` (same shape) flattened to float32 (float64 when
    either side is 64-bit; bf16/fp16 upcast exactly; complex as real pairs). NaN/Inf are
    counted and left out; so are dtype-extreme values (beyond half the narrower dtype's
    range, infinities included) of the same sign on both sides: they act alike (a
    ``finfo.min`` mask in fp32 and in fp16 masks the same positions), whatever their
    magnitude. ``th`` holds the thresholds the elementwise metrics use: rtol, atol
    (absolute), atol_rms (a fraction of the reference's RMS) and rel_floor."""

    def __init__(self, ref: Any, tgt: Any, th: dict[str, Any]) -> None:
        import torch

        wide64 = {torch.float64, torch.complex128, torch.int64}
        wide = torch.float64 if wide64 & {ref.dtype, tgt.dtype} else torch.float32
        big = extreme(ref.dtype, tgt.dtype)
        ref, tgt = _flat(ref, wide), _flat(tgt, wide)
        self.numel = ref.numel()
        self.nan = self.inf = self.ref_nonfinite = self.nonfinite_mismatch = self.masked = 0
        # Norms are finite iff every element is, and below ``big`` when no element is
        # extreme: both checks cost nothing extra.
        self.norm_ref, self.norm_tgt = norm(ref), norm(tgt)
        if not (math.isfinite(self.norm_ref) and math.isfinite(self.norm_tgt)) or \
                max(self.norm_ref, self.norm_tgt) >= big:
            ref, tgt = self._drop_nonfinite(ref, tgt, big)
        self.ref, self.tgt = ref, tgt
        self.rtol = float(th.get("rtol") or 0.0)
        self.rel_floor = float(th.get("rel_floor") or 1e-3)
        # norm_floor: a reference numerically zero against the tensor it was reduced from
        # (a bias gradient that cancels exactly) is judged against that tensor's scale
        self.norm_floor = float(th.get("norm_floor") or 0.0)
        self.below_floor = self.norm_ref < self.norm_floor
        scale = max(self.norm_ref, self.norm_floor)
        rms = scale / math.sqrt(ref.numel()) if ref.numel() else 0.0
        self.rms_ref = rms
        self.atol = max(float(th.get("atol") or 0.0), float(th.get("atol_rms") or 0.0) * rms)

    def _drop_nonfinite(self, ref: Any, tgt: Any, big: float) -> tuple[Any, Any]:
        import torch

        ext_r, ext_t = ref.abs() >= big, tgt.abs() >= big  # infinities included
        both = torch.isfinite(ref) & torch.isfinite(tgt) & ~ext_r & ~ext_t
        self.nan = int(torch.isnan(tgt).sum())
        self.inf = int(torch.isinf(tgt).sum())
        self.ref_nonfinite = int((~torch.isfinite(ref)).sum())
        alike = ext_r & ext_t & (torch.signbit(ref) == torch.signbit(tgt))
        self.masked = int(alike.sum())
        same = alike | (ref == tgt) | (torch.isnan(ref) & torch.isnan(tgt))
        self.nonfinite_mismatch = int((~both & ~same).sum())
        ref, tgt = ref[both], tgt[both]
        self.norm_ref, self.norm_tgt = norm(ref), norm(tgt)
        return ref, tgt

    @cached_property
    def diff(self) -> Any:
        return self.tgt - self.ref

    @cached_property
    def norm_diff(self) -> float:
        return norm(self.diff)

    @cached_property
    def absdiff(self) -> Any:
        return self.diff.abs()

    @cached_property
    def absref(self) -> Any:
        return self.ref.abs()

    @cached_property
    def floor(self) -> float:
        """Denominator floor for relative errors: near-zero references are not judged by
        relative error (msprobe divides by |ref| + eps, which flags noise around zero)."""
        return max(self.atol, self.rel_floor * self.rms_ref, 1e-30)

    @cached_property
    def relerr(self) -> Any:
        return self.absdiff / self.absref.clamp_min(self.floor)


def count(mask: Any) -> int:
    import torch

    return int(torch.count_nonzero(mask))
