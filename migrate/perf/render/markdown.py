"""The Markdown report of `migrate perf` (a CI summary or a PR comment): what was read, the
step breakdown and top operators as tables, the findings with their fix, MFU, the compare
with the reference and the gate. Every name from a profile goes through ``md_cell``: a
kernel name cannot break a table or inject HTML."""

from __future__ import annotations

from migrate.core.display import escape, md_cell
from migrate.perf.model import Report
from migrate.perf.render.charts import rank_rows, step_rows, text_bar
from migrate.perf.render.text import mfu_line, us

__all__ = ["render_markdown"]

MAX_ROWS = 50  # per table


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole > 0 else "-"


def _steps(report: Report) -> list[str]:
    if not report.steps:
        return []
    lines = [
        "## Step breakdown",
        "",
        "| rank | step | total | computing | comm not overlapped | free | source |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for s in report.steps[:MAX_ROWS]:
        t = s.total_us
        lines.append(
            f"| {'-' if s.rank is None else s.rank} | {'all' if s.step is None else s.step} | {us(t)} "
            f"| {us(s.computing_us)} ({_pct(s.computing_us, t)}) "
            f"| {us(s.communication_not_overlapped_us)} ({_pct(s.communication_not_overlapped_us, t)}) "
            f"| {us(s.free_us)} ({_pct(s.free_us, t)}) | {md_cell(s.source)} |"
        )
    if len(report.steps) > MAX_ROWS:
        lines.append(f"\n{len(report.steps) - MAX_ROWS} more step row(s): see `--format json`.")
    return lines + [""] + _pictures(report)


def _bars(rows: list[tuple[str, dict[str, float]]]) -> list[str]:
    longest = max((sum(parts.values()) for _, parts in rows), default=0.0)
    return [f"{label[:18]:<18} {text_bar(parts, longest)} {us(sum(parts.values()))}" for label, parts in rows]


def _pictures(report: Report) -> list[str]:
    """The step breakdown (and the per-rank means, with several ranks) as bars."""
    rows = step_rows(report.steps)
    if not rows:
        return []
    lines = ["█ computing  ▓ communication not overlapped  ░ free", *_bars(rows)]
    if len(report.ranks) > 1:
        lines += ["", "mean step per rank", *_bars(rank_rows(report))]
    return ["```text"] + [escape(line).replace("`", "'") for line in lines] + ["```", ""]


def _top_ops(report: Report) -> list[str]:
    if not report.top_ops:
        return []
    lines = [
        "## Top operators",
        "",
        "| rank | type | core | count | device time | share | costliest task |",
        "|---:|---|---|---:|---:|---:|---|",
    ]
    for o in report.top_ops[:MAX_ROWS]:
        lines.append(
            f"| {'-' if o.rank is None else o.rank} | `{md_cell(o.type)}` | {md_cell(o.core)} | {o.count} "
            f"| {us(o.total_us)} | {100 * o.share:.1f}% | `{md_cell(o.name)}` |"
        )
    return lines + [""]


def _findings(report: Report) -> list[str]:
    lines = ["## Findings", ""]
    if not report.findings:
        return lines + ["No findings.", ""]
    for f in report.findings:
        rank = f" (rank {f.rank})" if f.rank is not None else ""
        saving = f" *saves up to {us(f.saving_us)} per step*" if f.saving_us else ""
        lines.append(f"- **{f.id}** `{f.name}`{rank}: {md_cell(f.message)}{saving}")
        rule = f" (`migrate apply`: {f.rule})" if f.rule else ""
        lines.append(f"  - fix{rule}: {md_cell(f.fix)}")
        lines += [f"  - at `{md_cell(loc)}`" for loc in f.locations[:5]]
    return lines + [""]


def _compare(report: Report) -> list[str]:
    c = report.compare
    if not c:
        return []
    lines = ["## Compared with the reference", ""]
    lines += [f"- {md_cell(line)}" for line in c.get("summary", [])]
    lines += [f"- {md_cell(line)}" for line in mfu_line(c.get("ref_mfu"), "reference MFU")]
    lines += [f"- note: {md_cell(n)}" for n in c.get("notes", [])]
    if c.get("ops"):
        lines += ["", "| framework op | run per step | reference per step | lost per step |"]
        lines.append("|---|---:|---:|---:|")
        for op in c["ops"][:MAX_ROWS]:
            figures = " | ".join(us(op[k]) for k in ("us", "ref_us", "lost_us"))
            lines.append(f"| `{md_cell(op['op'])}` | {figures} |")
    if c.get("collectives"):
        lines += ["", "| collective | run per step | reference per step |", "|---|---:|---:|"]
        for row in c["collectives"][:MAX_ROWS]:
            lines.append(
                f"| `{md_cell(row['collective'])}` | {row['count']:g}x {us(row['us'])} "
                f"| {row['ref_count']:g}x {us(row['ref_us'])} |"
            )
    return lines + [""]


def render_markdown(report: Report) -> str:
    kinds = ", ".join(sorted({p.kind for p in report.profiles}))
    lines = [f"# migrate perf: {kinds} profile(s)", ""]
    for p in report.profiles:
        chip = f", {md_cell(p.chip)}" if p.chip else ""
        lines.append(f"- `{md_cell(p.path)}` ({p.kind}, {p.device}{chip})")
    lines.append("")
    lines += _steps(report) + _top_ops(report) + _findings(report)
    mfu = mfu_line(report.mfu)
    if mfu:
        lines += ["## MFU", ""] + [md_cell(line.strip()) for line in mfu] + [""]
    lines += _compare(report)
    notes = report.to_json()["notes"]
    if notes:
        lines += ["## Notes", ""] + [f"- {md_cell(n)}" for n in notes] + [""]
    if report.gate:
        failed = [f"- FAIL {md_cell(v)}" for v in report.gate["violations"]]
        lines += ["## Gate", ""] + (failed or ["PASS the `--fail-on` gate"])
    return "\n".join(lines).rstrip("\n") + "\n"
