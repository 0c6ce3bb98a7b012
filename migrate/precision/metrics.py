"""Comparison metrics: one small function each, registered by name.

Every metric receives a :class:`Pair` (reference and target upcast to float64, NaN/Inf
positions removed) and returns a float. Add one with ``@metric("name")``.
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


class Pair:
    """Reference ``ref`` and target ``tgt`` (same shape, float64, finite where compared)."""

    def __init__(self, ref: Any, tgt: Any, rtol: float, atol: float, rel_floor: float) -> None:
        import torch

        ref = ref.detach().reshape(-1).to(torch.float64)
        tgt = tgt.detach().reshape(-1).to(torch.float64)
        self.numel = ref.numel()
        # A float64 sum is finite iff every element is (short of 1e300-sized values);
        # far cheaper than torch.isfinite, which allocates and runs several kernels.
        if math.isfinite(float(ref.sum())) and math.isfinite(float(tgt.sum())):
            self.nan = self.inf = self.ref_nonfinite = self.nonfinite_mismatch = 0
        else:
            fin_r, fin_t = torch.isfinite(ref), torch.isfinite(tgt)
            both = fin_r & fin_t
            self.nan = int(torch.isnan(tgt).sum())
            self.inf = int(torch.isinf(tgt).sum())
            self.ref_nonfinite = int((~fin_r).sum())
            same = (ref == tgt) | (torch.isnan(ref) & torch.isnan(tgt))
            self.nonfinite_mismatch = int((~both & ~same).sum())
            ref, tgt = ref[both], tgt[both]
        self.ref, self.tgt = ref, tgt
        self.rtol, self.atol = rtol, atol
        self.rel_floor = rel_floor

    @cached_property
    def absdiff(self) -> Any:
        return (self.tgt - self.ref).abs()

    @cached_property
    def absref(self) -> Any:
        return self.ref.abs()

    @cached_property
    def floor(self) -> float:
        """Denominator floor for relative errors: near-zero references are not judged by
        relative error (msprobe divides by |ref| + eps, which flags noise around zero)."""
        if self.ref.numel() == 0:
            return self.atol
        rms = float(self.ref.square().mean().sqrt())
        return max(self.atol, self.rel_floor * rms)

    @cached_property
    def relerr(self) -> Any:
        return self.absdiff / self.absref.clamp_min(self.floor)


@metric("cosine")
def cosine(p: Pair) -> float:
    na, nb = float(p.ref.norm()), float(p.tgt.norm())
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(p.ref.dot(p.tgt)) / (na * nb)


@metric("max_abs")
def max_abs(p: Pair) -> float:
    return float(p.absdiff.max()) if p.absdiff.numel() else 0.0


@metric("max_rel")
def max_rel(p: Pair) -> float:
    return float(p.relerr.max()) if p.relerr.numel() else 0.0


@metric("rmse")
def rmse(p: Pair) -> float:
    return float(p.absdiff.square().mean().sqrt()) if p.absdiff.numel() else 0.0


@metric("mismatch_ratio")
def mismatch_ratio(p: Pair) -> float:
    """Share of elements failing ``|t - r| <= atol + rtol * |r|`` (torch.isclose)."""
    if p.numel == 0:
        return 0.0
    bad = int((p.absdiff > p.atol + p.rtol * p.absref).sum()) + p.nonfinite_mismatch
    return bad / p.numel


def _within(p: Pair, threshold: float) -> float:
    if p.numel == 0:
        return 1.0
    return int((p.relerr < threshold).sum()) / p.numel


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
