"""Stats-tier metrics: estimates from the recorded stats of stats-only dumps."""

from __future__ import annotations

from typing import Any

from migrate.precision import sketch
from migrate.precision.metrics import METRICS
from migrate.precision.metrics.tensor import cosine_from_norms


def _sketches(rs: dict, ts: dict) -> tuple[list[float], list[float]] | None:
    a, b = sketch.decode(rs.get("sketch")), sketch.decode(ts.get("sketch"))
    return (a, b) if a is not None and b is not None else None


@METRICS.register("sketch_cosine", tier="stats", estimates="cosine")
def sketch_cosine(rs: dict[str, Any], ts: dict[str, Any]) -> float | None:
    """Cosine from the exact norms and the sketched norm of the difference."""
    both = _sketches(rs, ts)
    if both is None or rs.get("norm") is None or ts.get("norm") is None:
        return None
    return cosine_from_norms(float(rs["norm"]), float(ts["norm"]), sketch.diff_norm(*both))


@METRICS.register("sketch_rel_err", tier="stats", estimates="rel_err")
def sketch_rel_err(rs: dict[str, Any], ts: dict[str, Any]) -> float | None:
    """rel_err from the sketched norm of the difference and the reference's exact norm."""
    both = _sketches(rs, ts)
    if both is None or not rs.get("norm"):
        return None
    return sketch.diff_norm(*both) / float(rs["norm"])


@METRICS.register("norm_rel", tier="stats", limit="max", key="stats_norm_rel", label="norm rel")
def norm_rel(rs: dict[str, Any], ts: dict[str, Any]) -> float | None:
    """|norm_t - norm_r| / norm_r (stats-only dumps without sketches fall back to it)."""
    nr, nt = rs.get("norm"), ts.get("norm")
    if nr is None or nt is None:
        return None
    return abs(float(nt) - float(nr)) / max(abs(float(nr)), 1e-30)


@METRICS.register("sketch_rmse", tier="stats", estimates="rmse")
def sketch_rmse(rs: dict[str, Any], ts: dict[str, Any]) -> float | None:
    """RMSE from the sketched norm of the difference."""
    both = _sketches(rs, ts)
    numel = rs.get("numel")
    if both is None or not numel:
        return None
    return sketch.diff_norm(*both) / float(numel) ** 0.5
