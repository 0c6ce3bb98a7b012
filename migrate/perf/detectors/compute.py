"""Findings on where the device computes slowly: AI CPU operators (PERF101), dtype casts
(PERF103), format conversions (PERF106). Each is judged on device ops in the profiled
steps; savings are per step and are upper bounds (the op's whole time)."""

from __future__ import annotations

from migrate.perf.analyze.rank import Analysis
from migrate.perf.catalog import detector, limit, make
from migrate.perf.detectors.common import device_groups, launch_locations, launcher_names, pct, us
from migrate.perf.model import Finding

WIDE_DTYPES = ("INT64", "DOUBLE", "FLOAT64", "UINT64", "COMPLEX")


def _device_total(a: Analysis) -> float:
    cols = a.tl.device_ops.cols
    return sum(cols["dur"][i] for i in a.ctx.ops_in_steps()) or 1.0


@detector("PERF101")
def aicpu_operators(a: Analysis) -> list[Finding]:
    groups = device_groups(a, lambda name, kind, core: core == "AI_CPU")
    per_step = a.step_count
    groups = {k: g for k, g in groups.items() if g.total_us / per_step >= limit("PERF101", "min_us_per_step")}
    if not groups:
        return []
    total = sum(g.total_us for g in groups.values()) / per_step
    step_us = a.mean_step_us
    ranked = sorted(groups.values(), key=lambda g: -g.total_us)
    listed = ", ".join(f"{g.type} x{g.count} ({us(g.total_us / per_step)})" for g in ranked[:5])
    dtypes = sorted({d for g in ranked for d in g.dtypes})
    wide = [d for d in dtypes if any(w in d.upper() for w in WIDE_DTYPES)]
    indices = [i for g in ranked for i in g.indices]
    launched_by = launcher_names(a, indices)
    message = f"{len(groups)} operator type(s) ran on the AI CPU: {listed}; {us(total)} per step"
    if step_us:
        message += f" ({pct(total / step_us)} of the step)"
    if launched_by:
        message += f", launched by {', '.join(launched_by)}"
    seen = (
        "; ".join(dtypes[:4])
        if dtypes
        else "not recorded here: kernel_details.csv's Input Data Types has them"
    )
    return [
        make(
            "PERF101",
            message,
            {
                "ops": [{"type": g.type, "count": g.count, "total_us": round(g.total_us, 3)} for g in ranked],
                "input_dtypes": dtypes,
                "wide_dtypes": wide,
                "launched_by": launched_by,
                "per_step_us": round(total, 3),
            },
            total,
            locations=launch_locations(a, indices),
            rank=a.rank,
            share=total / step_us if step_us else None,
            dtypes=f"inputs seen: {seen}",
        )
    ]


def _share_finding(a: Analysis, finding_id: str, types: tuple[str, ...], what: str) -> list[Finding]:
    groups = device_groups(a, lambda name, kind, core: kind in types)
    if not groups:
        return []
    spent = sum(g.total_us for g in groups.values())
    share = spent / _device_total(a)
    if share < limit(finding_id, "min_share"):
        return []
    per_step = spent / a.step_count
    count = sum(g.count for g in groups.values())
    indices = [i for g in groups.values() for i in g.indices]
    launched_by = launcher_names(a, indices)
    message = f"{count} {what} kernel(s) took {us(per_step)} per step, {pct(share)} of the device time"
    if launched_by:
        message += f", launched by {', '.join(launched_by)}"
    return [
        make(
            finding_id,
            message,
            {
                "count": count,
                "total_us": round(spent, 3),
                "device_share": round(share, 6),
                "launched_by": launched_by,
            },
            per_step,
            locations=launch_locations(a, indices),
            rank=a.rank,
            share=per_step / a.mean_step_us if a.mean_step_us else None,
        )
    ]


@detector("PERF103")
def cast_round_trips(a: Analysis) -> list[Finding]:
    if a.tl.device != "npu":
        return []
    return _share_finding(a, "PERF103", ("Cast",), "Cast")


@detector("PERF106")
def format_conversions(a: Analysis) -> list[Finding]:
    if a.tl.device != "npu":
        return []
    return _share_finding(a, "PERF106", ("TransData",), "TransData")
