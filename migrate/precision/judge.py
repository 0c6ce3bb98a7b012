"""Turn one aligned pair of tensors (or of their stats) into a report entry with a status.

The fields and the checks come from the metric registry: every registered metric fills its
field, and every metric with a ``limit`` is gated by ``<key>_<limit>`` / ``<key>_warn``.
"""

from __future__ import annotations

import math
from typing import Any

from migrate.precision import metrics
from migrate.precision.classes import registry
from migrate.precision.metrics.pair import Pair


def base_entry(rec: dict, tgt: dict | None) -> dict[str, Any]:
    entry = {
        "name": rec["name"],
        "call": rec["call"],
        "kind": rec["kind"],
        "index": rec["index"],
        "dtype": (tgt or rec)["dtype"],
        "ref_dtype": rec["dtype"],
        "shape": rec["shape"],
    }
    entry.update({f: None for f in metrics.fields()})
    entry.update({"nan": 0, "inf": 0, "status": "pass", "reason": ""})
    return entry


def tensor_metrics(ref_t: Any, tgt_t: Any, th: dict, dtypes: tuple[str, str] | None = None) -> dict[str, Any]:
    """Every tensor metric of a pair (numpy arrays or torch tensors; ``dtypes`` as stored
    when the arrays were widened, e.g. bfloat16 read as float32)."""
    pair = Pair(ref_t, tgt_t, th, dtypes)
    out = metrics.compute("tensor", pair)
    out.update(nan=pair.nan, inf=pair.inf, nonfinite_mismatch=pair.nonfinite_mismatch)
    return out


def _chance(spec: metrics.MetricSpec, m: dict[str, Any], th: dict) -> float | None:
    """What chance gives the metric (its ``noise`` field) times the gate's multiple."""
    chance = m.get(spec.noise) if spec.noise else None
    if chance is None or spec.noise_key is None:
        return chance
    k = th.get(spec.noise_key)
    return chance * (1.0 if k is None else k)


def _crossed(spec: metrics.MetricSpec, value: float, limit: Any, m: dict[str, Any], th: dict) -> bool:
    if limit is None or value is None:
        return False
    chance = _chance(spec, m, th)
    if chance is not None and value <= chance:
        return False
    return value < limit if spec.limit == "min" else value > limit


def _reason(spec: metrics.MetricSpec, value: float, limit: Any, th: dict, m: dict[str, Any]) -> str:
    sign = "<" if spec.limit == "min" else ">"
    text = f"{spec.field} {format(value, spec.fmt)} {sign} {limit:g}"
    if spec.key == "mismatch":
        text += f" (rtol {th.get('rtol', 0):g}, atol_rms {th.get('atol_rms', 0):g})"
    if spec.noise and spec.noise_key:
        k, chance = th.get(spec.noise_key), m.get(spec.noise)
        if k is not None and k != 1.0 and chance is not None:
            text += f" and > {k:g} x its {spec.noise} {chance:.2g} (a wrong factor, not noise)"
    return text


def failing_metrics(m: dict[str, Any], th: dict) -> set[str]:
    """The fields whose fail limits ``m`` crosses (empty for NaN/Inf mismatches, which
    are not a matter of degree)."""
    if m.get("nonfinite_mismatch") or m.get("nan") or m.get("inf"):
        return set()
    return {
        spec.field
        for spec in metrics.gated()
        if (value := m.get(spec.field)) is not None
        and _crossed(spec, value, th.get(spec.gate_keys[0]), m, th)
    }


def judge(m: dict[str, Any], th: dict) -> tuple[str, str]:
    """``(status, reason)`` of computed metrics against thresholds (fail before warn)."""
    if m.get("nonfinite_mismatch"):
        return "fail", (
            f"{m['nonfinite_mismatch']} NaN/Inf or dtype-extreme values where the reference differs"
        )
    # Errors this small cannot be resolved in the class's dtype: values underflow to
    # subnormals, whose spacing is fixed (2**-149 in fp32) so their relative error grows
    # without bound (a randomly initialised deep CNN's activations vanish to 1e-42).
    tiny = registry().smallest_normal(th.get("class"))
    if tiny and m.get("rmse") is not None and m["rmse"] <= tiny:
        return "pass", f"error below the smallest normal {th['class']} ({tiny:.2g})"
    for level in ("fail", "warn"):
        for spec in metrics.gated():
            key = spec.gate_keys[0 if level == "fail" else 1]
            value = m.get(spec.field)
            if value is not None and _crossed(spec, value, th.get(key), m, th):
                return level, _reason(spec, value, th[key], th, m)
    return "pass", ""


def judge_stats(ref_rec: dict, tgt_rec: dict, th: dict) -> tuple[str, str, dict]:
    """Stats-only comparison: NaN/Inf counts must agree; the stats metrics (sketch
    estimates of cosine and relative error, the norm) are judged like tensor metrics."""
    numel = math.prod(ref_rec["shape"])
    rs = {**(ref_rec.get("stats") or {}), "numel": numel}
    ts = {**(tgt_rec.get("stats") or {}), "numel": numel}
    m = metrics.compute("stats", rs, ts)
    extra = {
        "nan": ts.get("nan", 0),
        "inf": ts.get("inf", 0),
        **{k: v for k, v in m.items() if v is not None},
    }
    if (rs.get("nan"), rs.get("inf")) != (ts.get("nan"), ts.get("inf")):
        return (
            "fail",
            (
                f"NaN/Inf counts differ: ref {rs.get('nan')}/{rs.get('inf')}, "
                f"target {ts.get('nan')}/{ts.get('inf')}"
            ),
            extra,
        )
    status, reason = judge(m, th)
    return status, (reason + " (estimated from stats)" if reason else ""), extra


def compare_records(ref_rec: dict, tgt_rec: dict, ref_t: Any, tgt_t: Any, th: dict) -> dict[str, Any]:
    entry = base_entry(ref_rec, tgt_rec)
    entry["class"] = th.get("class")
    if th.get("skip"):
        entry["status"], entry["reason"] = "pass", "skipped by gate override"
        return entry
    if list(ref_rec["shape"]) != list(tgt_rec["shape"]):
        entry["status"] = "fail"
        entry["reason"] = f"shape mismatch: ref {ref_rec['shape']} vs target {tgt_rec['shape']}"
        entry["tgt_shape"] = tgt_rec["shape"]
        return entry
    if ref_t is None or tgt_t is None:
        ref_rec, tgt_rec = _with_sketch(ref_rec, ref_t), _with_sketch(tgt_rec, tgt_t)
        status, reason, extra = judge_stats(ref_rec, tgt_rec, th)
        entry.update(extra, status=status, reason=reason or "stats only", tier="stats")
        return entry
    m = tensor_metrics(ref_t, tgt_t, th, (ref_rec["dtype"], tgt_rec["dtype"]))
    entry.update({k: m[k] for k in (*metrics.fields(), "nan", "inf") if k in m})
    entry["status"], entry["reason"] = judge(m, th)
    return entry


def _with_sketch(rec: dict, t: Any) -> dict:
    """A full tensor compared with a stats-only record: sketch it the same way."""
    if t is None or (rec.get("stats") or {}).get("sketch"):
        return rec
    import numpy as np

    from migrate.precision.sketch import encode, sketch

    if isinstance(t, np.ndarray):  # compare reads arrays; the sketch is torch's (rare)
        import torch

        t = torch.from_numpy(np.require(t, requirements=["C", "W"]))  # mmap views: a copy
    return {**rec, "stats": {**(rec.get("stats") or {}), "sketch": encode(sketch(t))}}
