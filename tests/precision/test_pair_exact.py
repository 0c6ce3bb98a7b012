"""Identical tensors (unchanged weights, integer inputs) skip the elementwise passes: the
metrics come out exactly as the full computation gives them."""

from __future__ import annotations

import math

import numpy as np

from migrate.precision import metrics
from migrate.precision.metrics.pair import Pair

TH = {"rtol": 1e-3, "atol": 1e-5, "atol_rms": 1e-3, "rel_floor": 1e-3}


class FullPair(Pair):
    exact = False  # every metric computed elementwise


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
        for x, y in zip(a.values(), b.values())
    )


def test_identical_tensors_give_the_metrics_of_the_full_computation():
    a = np.random.default_rng(0).standard_normal(10_000).astype(np.float32)
    a[5], a[7], a[9] = np.nan, -3e38, np.inf  # non-finite and dtype-extreme values too
    for ref in (a, a[:100].copy(), np.zeros(64, np.float32), a.astype(np.float64)):
        fast, full = Pair(ref, ref.copy(), TH), FullPair(ref, ref.copy(), TH)
        assert fast.exact
        assert _same(metrics.compute("tensor", fast), metrics.compute("tensor", full))


def test_a_difference_too_small_for_float64_squares_is_not_exact():
    ref = np.zeros(8, np.float64)
    tgt = ref.copy()
    tgt[3] = 1e-170  # its square underflows: norm_diff is 0, the tensors differ
    p = Pair(ref, tgt, TH)
    assert not p.exact
    assert metrics.compute("tensor", p)["max_abs"] == 1e-170
