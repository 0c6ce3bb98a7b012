"""Turn one aligned pair of tensors (or of their stats) into a report entry with a status."""

from __future__ import annotations

from typing import Any

from migrate.precision.metrics import Pair, compute_all

METRIC_FIELDS = ("cosine", "max_abs", "max_rel", "rmse", "mismatch_ratio",
                 "one_thousandth_ratio", "five_thousandth_ratio")


def base_entry(rec: dict, tgt: dict | None) -> dict[str, Any]:
    entry = {"name": rec["name"], "call": rec["call"], "kind": rec["kind"],
             "index": rec["index"], "dtype": (tgt or rec)["dtype"], "ref_dtype": rec["dtype"],
             "shape": rec["shape"]}
    entry.update({f: None for f in METRIC_FIELDS})
    entry.update({"nan": 0, "inf": 0, "status": "pass", "reason": ""})
    return entry


def tensor_metrics(ref_t: Any, tgt_t: Any, th: dict, rel_floor: float) -> dict[str, Any]:
    pair = Pair(ref_t, tgt_t, float(th["rtol"]), float(th["atol"]), rel_floor)
    out = compute_all(pair)
    out.update(nan=pair.nan, inf=pair.inf, nonfinite_mismatch=pair.nonfinite_mismatch)
    return out


def judge(m: dict[str, Any], th: dict, replay: bool = False) -> tuple[str, str]:
    """``(status, reason)`` of computed metrics against thresholds."""
    if m.get("nonfinite_mismatch"):
        return "fail", f"{m['nonfinite_mismatch']} NaN/Inf where the reference differs"
    limit = th["replay_mismatch_max"] if replay else th["mismatch_max"]
    if m["mismatch_ratio"] > limit:
        return "fail", (f"mismatch_ratio {m['mismatch_ratio']:.3g} > {limit:g} "
                        f"(rtol {th['rtol']:g}, atol {th['atol']:g})")
    if m["cosine"] < th["cosine_min"]:
        return "fail", f"cosine {m['cosine']:.7f} < {th['cosine_min']}"
    if th.get("max_abs_max") is not None and m["max_abs"] > th["max_abs_max"]:
        return "fail", f"max_abs {m['max_abs']:.3g} > {th['max_abs_max']:g}"
    if not replay and m["mismatch_ratio"] > th.get("mismatch_warn", limit):
        return "warn", f"mismatch_ratio {m['mismatch_ratio']:.3g} > {th['mismatch_warn']:g}"
    if not replay and m["cosine"] < th.get("cosine_warn", th["cosine_min"]):
        return "warn", f"cosine {m['cosine']:.7f} < {th['cosine_warn']}"
    return "pass", ""


def judge_stats(ref_rec: dict, tgt_rec: dict, th: dict) -> tuple[str, str, dict]:
    """Stats-only comparison: NaN/Inf counts must agree, norms within stats_norm_rel_max."""
    rs, ts = ref_rec.get("stats") or {}, tgt_rec.get("stats") or {}
    extra = {"nan": ts.get("nan", 0), "inf": ts.get("inf", 0)}
    if (rs.get("nan"), rs.get("inf")) != (ts.get("nan"), ts.get("inf")):
        return "fail", (f"NaN/Inf counts differ: ref {rs.get('nan')}/{rs.get('inf')}, "
                        f"target {ts.get('nan')}/{ts.get('inf')}"), extra
    nr, nt = rs.get("norm"), ts.get("norm")
    if nr is None or nt is None:
        return "pass", "", extra
    rel = abs(nt - nr) / max(abs(nr), float(th["atol"]), 1e-30)
    extra["norm_rel"] = rel
    if rel > th["stats_norm_rel_max"]:
        return "fail", f"norm differs by {rel:.3g} > {th['stats_norm_rel_max']:g}", extra
    return "pass", "", extra


def compare_records(ref_rec: dict, tgt_rec: dict, ref_t: Any, tgt_t: Any, th: dict,
                    rel_floor: float, replay: bool = False) -> dict[str, Any]:
    entry = base_entry(ref_rec, tgt_rec)
    if th.get("skip"):
        entry["status"], entry["reason"] = "pass", "skipped by gate override"
        return entry
    if list(ref_rec["shape"]) != list(tgt_rec["shape"]):
        entry["status"] = "fail"
        entry["reason"] = f"shape mismatch: ref {ref_rec['shape']} vs target {tgt_rec['shape']}"
        entry["tgt_shape"] = tgt_rec["shape"]
        return entry
    if ref_t is None or tgt_t is None:
        status, reason, extra = judge_stats(ref_rec, tgt_rec, th)
        entry.update(extra, status=status, reason=reason or "stats only")
        return entry
    m = tensor_metrics(ref_t, tgt_t, th, rel_floor)
    entry.update({k: m[k] for k in (*METRIC_FIELDS, "nan", "inf")})
    entry["status"], entry["reason"] = judge(m, th, replay)
    return entry
