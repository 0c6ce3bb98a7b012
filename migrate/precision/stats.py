"""Summary statistics recorded for every dumped tensor (min, max, mean, norm, NaN/Inf counts)."""

from __future__ import annotations

import math
from typing import Any

from migrate.precision.metrics.pair import TINY_NORM


def _num(value: float) -> float | None:
    """NaN becomes None (JSON has no NaN); an infinite norm stays inf (written as Infinity)."""
    if math.isnan(value):
        return None
    return value


def tensor_stats(t: Any, with_sketch: bool = False) -> dict[str, Any]:
    """Stats of ``t`` computed on its own device; NaN/Inf are counted and left out of the
    rest. ``with_sketch`` adds the 64-bucket projection sketch (stats-only dumps)."""
    out = _moments(t)
    if with_sketch:
        from migrate.precision.sketch import encode, sketch

        value = encode(sketch(t))
        if value is not None:
            out["sketch"] = value
    return out


def _moments(t: Any) -> dict[str, Any]:
    import torch

    if t.numel() == 0:
        return {"min": None, "max": None, "mean": None, "norm": None, "nan": 0, "inf": 0}
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    if t.is_complex():
        t = torch.view_as_real(t)
    if not t.is_floating_point():
        lo, hi = torch.aminmax(t)
        f = t.to(torch.float64)
        return {
            "min": int(lo),
            "max": int(hi),
            "mean": float(f.mean()),
            "norm": float(torch.linalg.vector_norm(f)),
            "nan": 0,
            "inf": 0,
        }
    acc = torch.float64 if t.dtype == torch.float64 else torch.float32
    lo, hi = torch.aminmax(t)  # NaN propagates into min/max: one pass tells finiteness
    packed = torch.stack(
        [lo.to(acc), hi.to(acc), t.mean(dtype=acc), torch.linalg.vector_norm(t, dtype=acc)]
    ).tolist()
    if math.isfinite(packed[0]) and math.isfinite(packed[1]):
        nan = inf = 0
    else:
        nan, inf = int(torch.isnan(t).sum()), int(torch.isinf(t).sum())
        vals = t[torch.isfinite(t)]
        if vals.numel() == 0:
            return {"min": None, "max": None, "mean": None, "norm": None, "nan": nan, "inf": inf}
        lo, hi = torch.aminmax(vals)
        packed = torch.stack(
            [lo.to(acc), hi.to(acc), vals.mean(dtype=acc), torch.linalg.vector_norm(vals, dtype=acc)]
        ).tolist()
    if acc != torch.float64 and not TINY_NORM <= packed[3] < math.inf:
        # squares under/overflow float32: a finite tensor of tiny or huge values
        packed[3] = float(torch.linalg.vector_norm(vals if nan or inf else t, dtype=torch.float64))
    return {
        "min": _num(packed[0]),
        "max": _num(packed[1]),
        "mean": _num(packed[2]),
        "norm": _num(packed[3]),
        "nan": nan,
        "inf": inf,
    }
