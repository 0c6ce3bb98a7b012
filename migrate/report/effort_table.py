"""The effort table of the text and markdown reports: what, where, how long, why.

One row per work package (migrate/report/effort.py), costliest first; free packages
(no-ops, NPU-aware code) and optional perf advice are summed on lines of their own, so
the table a lead pastes into a plan holds only the work.
"""

from __future__ import annotations

from migrate.core.display import escape, md_cell
from migrate.report.effort import Effort, Package, format_minutes

MAX_ROWS = 30
MAX_PATHS = 2


def where(pkg: Package) -> str:
    shown = ", ".join(pkg.paths[:MAX_PATHS])
    more = len(pkg.paths) - MAX_PATHS
    return f"{shown} (+{more} more)" if more > 0 else shown


def _split(effort: Effort) -> tuple[list[Package], list[Package]]:
    paid = [p for p in effort.packages if p.minutes > 0]
    free = [p for p in effort.packages if p.minutes <= 0]
    return paid, free


def _tail(effort: Effort, free: list[Package]) -> list[str]:
    out = []
    if free:
        n = sum(p.findings for p in free)
        reasons = sorted({p.why for p in free})
        out.append(f"Free: {n} finding{'s cost' if n != 1 else ' costs'} nothing ({'; '.join(reasons)}).")
    if effort.optional:
        n = sum(p.findings for p in effort.optional)
        out.append(
            f"Optional perf advice: {len(effort.optional)} package"
            f"{'s' if len(effort.optional) != 1 else ''}, {n} finding"
            f"{'s' if n != 1 else ''}, ~{format_minutes(effort.optional_minutes)} "
            "(not in the total)."
        )
    out.append(f"The figure rests on {effort.basis}.")
    return out


def text_lines(effort: Effort) -> list[str]:
    paid, free = _split(effort)
    out = [
        f"Effort: ~{effort.describe()} in {len(paid)} work package"
        f"{'s' if len(paid) != 1 else ''}, a planning figure"
    ]
    if paid:
        width = max(len(format_minutes(p.minutes)) for p in paid[:MAX_ROWS])
        for p in paid[:MAX_ROWS]:
            out.append(
                f"  {format_minutes(p.minutes):>{width}}  {escape(p.name)}: "
                f"{p.findings} finding{'s' if p.findings != 1 else ''} in {escape(where(p))}"
            )
            out.append(f"  {'':>{width}}  why: {escape(p.why)}")
        if len(paid) > MAX_ROWS:
            rest = paid[MAX_ROWS:]
            out.append(
                f"  ... and {len(rest)} more packages, "
                f"~{format_minutes(sum(p.minutes for p in rest))} (see --format json)"
            )
    return out + _tail(effort, free)


_cell = md_cell


def markdown_lines(effort: Effort) -> list[str]:
    paid, free = _split(effort)
    out = [f"### Effort: ~{effort.describe()} in {len(paid)} work packages", ""]
    if paid:
        out += ["| Package | Where | Findings | Time | Why |", "|---|---|---:|---:|---|"]
        for p in paid[:MAX_ROWS]:
            out.append(
                f"| {_cell(p.name)} | {_cell(where(p))} | {p.findings} | "
                f"{format_minutes(p.minutes)} | {_cell(p.why)} |"
            )
        if len(paid) > MAX_ROWS:
            out.append(
                f"| _{len(paid) - MAX_ROWS} more packages_ | | | "
                f"{format_minutes(sum(p.minutes for p in paid[MAX_ROWS:]))} | |"
            )
        out.append("")
    return out + [_cell(line) for line in _tail(effort, free)] + [""]
