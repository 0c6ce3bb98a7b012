"""Full-tensor metrics (tier "tensor"): one small function each, on a Pair."""

from __future__ import annotations

import math

from migrate.precision.metrics import METRICS
from migrate.precision.metrics.pair import Pair, cosine_from_norms, count


@METRICS.register("cosine", limit="min", fmt=".8f")
def cosine(p: Pair) -> float | None:
    """Cosine similarity of target and reference (None for a reference below its norm floor:
    its direction is rounding noise)."""
    if p.below_floor:
        return None
    return cosine_from_norms(p.norm_ref, p.norm_tgt, p.norm_diff)


@METRICS.register("rel_err", limit="max", label="rel err")
def rel_err(p: Pair) -> float:
    """|t - r| / max(|r|, norm floor): the error relative to the tensor's scale (L2)."""
    scale = max(p.norm_ref, p.norm_floor)
    if scale == 0.0:
        return 0.0 if p.norm_diff == 0.0 else math.inf
    return p.norm_diff / scale


# A wrong factor must stand out from the noise: z standard deviations of what random
# errors of the measured size project onto the reference.
SIGNIFICANCE_Z = 3.0


def _scale(p: Pair) -> float | None:
    if p.below_floor:
        return None
    if p.norm_ref == 0.0:
        return 0.0 if p.norm_tgt == 0.0 else math.inf
    dot = (p.norm_tgt**2 + p.norm_ref**2 - p.norm_diff**2) / 2.0
    return abs(dot / p.norm_ref**2 - 1.0)


@METRICS.register("scale_err", limit="max", label="scale err", noise="scale_noise")
def scale_err(p: Pair) -> float | None:
    """|<t, r> / <r, r> - 1|: how far the target is a scaled copy of the reference. Honest
    rounding adds noise that is uncorrelated with the reference (this stays near 0 while
    rel_err grows); a wrong factor (a gradient scaled by 1.25, a halved weight gradient)
    shows in full here even when the noise of a low-precision run hides it in rel_err.
    Gated only above ``scale_noise``."""
    return _scale(p)


@METRICS.register("scale_noise", show=False)
def scale_noise(p: Pair) -> float | None:
    """The scale_err that noise of relative size rel_err produces by chance (z = 3
    spreads): noise proportional to each element projects onto the reference with a spread
    of rel_err / sqrt(n_eff), n_eff = |r|^4 / sum(r^4) the reference's effective number of
    elements. A tensor of a few elements, or one dominated by a few (an 8-number
    squeeze-excite gradient), cannot tell a factor from noise on its largest element.
    (Computed exactly only when it matters: n_eff <= numel bounds it from below.)"""
    value = _scale(p)
    if value is None or p.norm_ref == 0.0:
        return None
    noise = SIGNIFICANCE_Z * p.norm_diff / p.norm_ref
    low = noise / math.sqrt(max(p.numel, 1))
    if value <= low:
        return low
    return noise / math.sqrt(max(p.effective_numel, 1e-300))


@METRICS.register("floored", show=False)
def floored(p: Pair) -> bool:
    """The reference is below its norm floor and the runs disagree in direction: rounding
    noise of a gradient far below what it was computed from (grad_floor.py), judged
    against the floor."""
    return p.below_floor


@METRICS.register("max_abs", limit="max", label="max abs")
def max_abs(p: Pair) -> float:
    """The largest absolute difference |t - r|."""
    return float(p.absdiff.max()) if p.ref.size and not p.exact else 0.0


@METRICS.register("max_rel", label="max rel")
def max_rel(p: Pair) -> float:
    """The largest relative difference, relative to max(|r|, rel_floor * rms(r))."""
    return float(p.relerr.max()) if p.ref.size and not p.exact else 0.0


@METRICS.register("rmse")
def rmse(p: Pair) -> float:
    """Root mean square of t - r."""
    return p.norm_diff / math.sqrt(p.diff.size) if p.diff.size else 0.0


@METRICS.register("mismatch_ratio", limit="max", key="mismatch", label="mismatch")
def mismatch_ratio(p: Pair) -> float:
    """Share of elements failing ``|t - r| <= atol + rtol * |r|`` (as torch.isclose), with
    atol = max(atol, atol_rms * rms(ref)) so the band follows the tensor's scale."""
    if p.numel == 0:
        return 0.0
    if p.exact:  # no difference exceeds a tolerance >= 0
        return p.nonfinite_mismatch / p.numel
    import numpy as np

    tol = np.multiply(p.absref, p.rtol)
    tol = np.add(tol, p.atol, out=tol)
    return (count(p.absdiff > tol) + p.nonfinite_mismatch) / p.numel


def _within(p: Pair, threshold: float) -> float:
    if p.numel == 0:
        return 1.0
    if p.exact:  # relative error 0 on every finite element
        return p.ref.size / p.numel
    return count(p.relerr < threshold) / p.numel


@METRICS.register("one_thousandth_ratio", label="1/1000", show=False)
def one_thousandth_ratio(p: Pair) -> float:
    """msprobe's "one thousandth" ratio: share of elements with relative error < 0.001."""
    return _within(p, 0.001)


@METRICS.register("five_thousandth_ratio", label="5/1000", show=False)
def five_thousandth_ratio(p: Pair) -> float:
    """msprobe's "five thousandths" ratio: share of elements with relative error < 0.005."""
    return _within(p, 0.005)
