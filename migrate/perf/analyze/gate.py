"""The CI gate of `migrate perf`: ``--fail-on`` conditions, each KEY=VALUE or a finding
selector, judged on the report.

| condition | fails when |
|---|---|
| ``free=0.3`` | a rank's mean free share of the step is above 0.3 |
| ``exposed=0.1`` | a rank's mean share of communication not overlapped is above 0.1 |
| ``mfu=0.35`` | MFU is below 0.35 (needs ``--model`` or ``--flops``) |
| ``regression=0.1`` | the mean step is more than 10 % slower than ``--ref``'s |
| ``PERF202``, ``PERF2``, ``host-syncs``, ``host`` | a finding with that ID, ID prefix, name or kind |
| ``PERF202=0.05`` (a selector ``=share``) | such a finding saving at least that share of the step |

A condition that needs what the run does not have (mfu without FLOPs, regression without
``--ref``) is a usage error, so a gate never passes on a figure it did not compute.
"""

from __future__ import annotations

import math
import re
from typing import Any

from migrate.core.errors import UsageError
from migrate.perf.catalog import KINDS, catalog
from migrate.perf.model import Report

__all__ = ["judge", "parse_fail_on"]

FIGURES = ("free", "exposed", "mfu", "regression")


def _share(text: str, key: str) -> float:
    try:
        value = float(text.strip().rstrip("%")) / (100 if text.strip().endswith("%") else 1)
    except ValueError:
        raise UsageError(
            f"--fail-on {key}={text}: the value must be a number (a share: 0.3 or 30%)"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"--fail-on {key}={text}: the value must be a finite share >= 0")
    return value


def _selector_ok(sel: str) -> bool:
    entries = catalog().values()
    return (
        sel in KINDS
        or any(e.id.startswith(sel) or e.name == sel for e in entries)
        and bool(re.fullmatch(r"PERF\d{0,3}|[a-z][a-z-]*", sel))
    )


def parse_fail_on(conditions: list[str]) -> dict[str, Any]:
    """``["free=0.3", "PERF202"]`` -> ``{"free": 0.3, "findings": {"PERF202": 0.0}}``."""
    out: dict[str, Any] = {}
    for cond in conditions:
        key, sep, value = cond.partition("=")
        key = key.strip()
        if key in FIGURES:
            if not sep:
                raise UsageError(f"--fail-on {key}: give a value ({key}=0.3)")
            out[key] = _share(value, key)
        elif _selector_ok(key):
            out.setdefault("findings", {})[key] = _share(value, key) if sep else 0.0
        else:
            raise UsageError(
                f"--fail-on {cond}: unknown condition (use free=, exposed=, mfu=, regression=, "
                "a finding ID such as PERF202 or prefix PERF2, a finding name, or a kind: "
                + ", ".join(KINDS)
                + ")"
            )
    return out


def _matches(sel: str, finding) -> bool:
    return finding.id.startswith(sel) or finding.name == sel or finding.kind == sel


def judge(report: Report, fail_on: dict[str, Any]) -> dict[str, Any]:
    violations: list[str] = []
    for r in report.ranks:
        steps = [s for s in r.steps if s.total_us > 0]
        if not steps:
            continue
        label = f"rank {r.rank}" if r.rank is not None else r.profile.path
        free = sum(s.free_share for s in steps) / len(steps)
        exposed = sum(s.exposed_comm_share for s in steps) / len(steps)
        if "free" in fail_on and free > fail_on["free"]:
            violations.append(f"{label}: free share {free:.3f} > {fail_on['free']:g}")
        if "exposed" in fail_on and exposed > fail_on["exposed"]:
            violations.append(f"{label}: exposed communication {exposed:.3f} > {fail_on['exposed']:g}")
    if "mfu" in fail_on:
        value = (report.mfu or {}).get("mfu")
        if value is None:
            raise UsageError("--fail-on mfu=: MFU needs --model MOD:FN or --flops N, and a known chip peak")
        if value < fail_on["mfu"]:
            violations.append(f"MFU {value:.3f} < {fail_on['mfu']:g}")
    if "regression" in fail_on:
        ratio = (report.compare or {}).get("step_ratio")
        if ratio is None:
            raise UsageError("--fail-on regression=: needs --ref PATH (a reference run)")
        if ratio - 1 > fail_on["regression"]:
            violations.append(
                f"the step is {100 * (ratio - 1):.1f}% slower than the reference "
                f"(> {100 * fail_on['regression']:g}%)"
            )
    for sel, share in (fail_on.get("findings") or {}).items():
        for f in report.findings:
            if _matches(sel, f) and (share == 0 or (f.share or 0) >= share):
                violations.append(f"{f.id} {f.name}" + (f" (rank {f.rank})" if f.rank is not None else ""))
    return {"failed": bool(violations), "conditions": fail_on, "violations": violations}
