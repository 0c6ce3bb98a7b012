"""Comparison metrics: one small function each, registered by name.

Every metric receives a :class:`Pair` and returns a float. Add one with ``@metric("name")``.
A Pair keeps both tensors in float32 (float64 when either side is float64: bf16/fp16
upcast exactly). Cosine comes from the norms of ref, target and their difference, which
stays accurate near 1 without float64 copies, so memory traffic stays low.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cached_property
from typing import Any

METRICS: dict[str, Callable[[Pair], float]] = {}


def metric(name: str) -> Callable:
    def register(fn: Callable[[Pair], float]) -> Callable[[Pair], float]:
        if name in METRICS:
            raise ValueError(f"metric {name!r} registered twice")
        METRICS[name] = fn
        return fn

    return register


def _norm(t: Any) -> float:
    """L2 norm; float32 accumulation (blocked, accurate to ~1e-7 relative) unless it
    overflows, then float64. Cosine below only needs the norms to that accuracy."""
    import torch

    if not t.numel():
        return 0.0
    n = float(torch.linalg.vector_norm(t))
    if math.isinf(n) and t.dtype != torch.float64:
        n = float(torch.linalg.vector_norm(t, dtype=torch.float64))
    return n


class Pair:
    """Reference ``ref`` and target ``tgt`` (same shape, finite where compared)."""

    def __init__(self, ref: Any, tgt: Any, rtol: float, atol: float, rel_floor: float) -> None:
        import torch

        wide = torch.float64 if torch.float64 in (ref.dtype, tgt.dtype) else torch.float32
        ref = ref.detach().reshape(-1).to(wide)
        tgt = tgt.detach().reshape(-1).to(wide)
        self.numel = ref.numel()
        self.nan = self.inf = self.ref_nonfinite = self.nonfinite_mismatch = 0
        # Norms are finite iff every element is: the finiteness check costs nothing extra.
        self.norm_ref, self.norm_tgt = _norm(ref), _norm(tgt)
        if not (math.isfinite(self.norm_ref) and math.isfinite(self.norm_tgt)):
            ref, tgt = self._drop_nonfinite(ref, tgt)
        self.ref, self.tgt = ref, tgt
        self.rtol, self.atol = rtol, atol
        self.rel_floor = rel_floor

    def _drop_nonfinite(self, ref: Any, tgt: Any) -> tuple[Any, Any]:
        import torch

        fin_r, fin_t = torch.isfinite(ref), torch.isfinite(tgt)
        both = fin_r & fin_t
        self.nan = int(torch.isnan(tgt).sum())
        self.inf = int(torch.isinf(tgt).sum())
        self.ref_nonfinite = int((~fin_r).sum())
        same = (ref == tgt) | (torch.isnan(ref) & torch.isnan(tgt))
        self.nonfinite_mismatch = int((~both & ~same).sum())
        ref, tgt = ref[both], tgt[both]
        self.norm_ref, self.norm_tgt = _norm(ref), _norm(tgt)
        return ref, tgt

    @cached_property
    def diff(self) -> Any:
        return self.tgt - self.ref

    @cached_property
    def norm_diff(self) -> float:
        return _norm(self.diff)

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
        if self.ref.numel() == 0:
            return self.atol
        return max(self.atol, self.rel_floor * self.norm_ref / math.sqrt(self.ref.numel()))

    @cached_property
    def relerr(self) -> Any:
        return self.absdiff / self.absref.clamp_min(self.floor)


def _count(mask: Any) -> int:
    import torch

    return int(torch.count_nonzero(mask))


@metric("cosine")
def cosine(p: Pair) -> float:
    """From norms: 1 - cos = (|d|^2 - (|r| - |t|)^2) / (2 |r| |t|). With float32 norms this
    is good to ~1e-10 near cos = 1 (where thresholds live) and ~1e-7 elsewhere."""
    na, nb = p.norm_ref, p.norm_tgt
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return 1.0 - (p.norm_diff ** 2 - (na - nb) ** 2) / (2.0 * na * nb)


@metric("max_abs")
def max_abs(p: Pair) -> float:
    return float(p.absdiff.max()) if p.absdiff.numel() else 0.0


@metric("max_rel")
def max_rel(p: Pair) -> float:
    return float(p.relerr.max()) if p.relerr.numel() else 0.0


@metric("rmse")
def rmse(p: Pair) -> float:
    return p.norm_diff / math.sqrt(p.diff.numel()) if p.diff.numel() else 0.0


@metric("mismatch_ratio")
def mismatch_ratio(p: Pair) -> float:
    """Share of elements failing ``|t - r| <= atol + rtol * |r|`` (torch.isclose)."""
    if p.numel == 0:
        return 0.0
    tol = p.absref * p.rtol + p.atol
    return (_count(p.absdiff > tol) + p.nonfinite_mismatch) / p.numel


def _within(p: Pair, threshold: float) -> float:
    if p.numel == 0:
        return 1.0
    return _count(p.relerr < threshold) / p.numel


@metric("one_thousandth_ratio")
def one_thousandth_ratio(p: Pair) -> float:
    """msprobe's "one thousandth" ratio: share of elements with relative error < 0.001."""
    return _within(p, 0.001)


@metric("five_thousandth_ratio")
def five_thousandth_ratio(p: Pair) -> float:
    """msprobe's "five thousandths" ratio: share of elements with relative error < 0.005."""
    return _within(p, 0.005)


def compute_all(pair: Pair) -> dict[str, float]:
    return {name: fn(pair) for name, fn in METRICS.items()}
