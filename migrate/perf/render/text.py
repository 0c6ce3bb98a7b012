"""The text report of `migrate perf`: what was read, the step breakdown per rank and step,
the top operators, the findings (saving first, each with its evidence, fix and source
lines), MFU, the compare with the reference, the gate, and what the profile lacked."""

from __future__ import annotations

import textwrap
from pathlib import Path

from migrate.core.display import escape
from migrate.perf.model import Report, StepBreakdown

__all__ = ["mfu_line", "render_text", "us"]

MAX_STEP_ROWS = 12  # per rank; the rest are summarised
WIDTH = 110  # findings are wrapped at this width


def us(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1e6:
        return f"{value / 1e6:.3g} s"
    if abs(value) >= 1e3:
        return f"{value / 1e3:.3g} ms"
    return f"{value:.3g} us"


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:5.1f}%" if whole > 0 else "    -"


def _profiles(report: Report) -> list[str]:
    lines = []
    for p in report.profiles:
        ranks = [r for r in p.ranks if r is not None]
        rank = f", rank {ranks[0]}" if len(ranks) == 1 else (f", {len(ranks)} ranks" if ranks else "")
        chip = f", {escape(p.chip)}" if p.chip else ""
        files = f": {', '.join(p.files)}" if p.files else ""
        lines.append(f"  {escape(p.path)} ({p.kind}, {p.device}{chip}{rank}){escape(files)}")
    return lines


def _step_line(s: StepBreakdown, owner: str = "") -> str:
    label = owner or (f"rank {s.rank} " if s.rank is not None else "")
    label += f"step {s.step}" if s.step is not None else "all"
    total, exposed = s.total_us, s.communication_not_overlapped_us
    return (
        f"  {label:<18} {us(total):>10}  computing {us(s.computing_us):>9} {_pct(s.computing_us, total)}"
        f"  comm not overlapped {us(exposed):>9} {_pct(exposed, total)}"
        f"  free {us(s.free_us):>9} {_pct(s.free_us, total)}"
    )


def _steps(report: Report) -> list[str]:
    lines = []
    numbers = [r.rank for r in report.ranks]
    mixed = len(set(numbers)) < len(numbers)  # profiles of several runs: name each by its file
    for r in report.ranks:
        shown = r.steps[:MAX_STEP_ROWS]
        owner = Path(r.profile.path).name[:24] + " " if mixed else ""
        lines += [_step_line(s, owner) for s in shown]
        if len(r.steps) > len(shown):
            lines.append(f"  ... {len(r.steps) - len(shown)} more step(s) of rank {r.rank}")
    sources = sorted({s.source for s in report.steps})
    if sources:
        lines.append(
            f"  (from {', '.join(sources)}; total = computing + communication not overlapped + free)"
        )
    return lines


def _top_ops(report: Report, limit: int = 10) -> list[str]:
    lines = []
    for r in report.ranks:
        if not r.top_ops:
            continue
        if len(report.ranks) > 1:
            lines.append(f"  rank {r.rank}:")
        for o in r.top_ops[:limit]:
            lines.append(
                f"  {escape(o.type)[:32]:<32} {escape(o.core)[:14]:<14} {o.count:>7}x {us(o.total_us):>10} "
                f"{100 * o.share:5.1f}%  {escape(o.name)[:60]}"
            )
    return lines


def _findings(report: Report) -> list[str]:
    lines = []
    for f in report.findings:
        where = (
            f" (rank {f.rank})" if f.rank is not None and len(report.ranks) > 1 or f.kind == "cluster" else ""
        )
        saving = f"  [saves up to {us(f.saving_us)} per step]" if f.saving_us else ""
        rule = f" [{f.rule}]" if f.rule else ""
        head = f"{f.id} {f.name}{where}: {escape(f.message)}{saving}"
        lines += textwrap.wrap(head, WIDTH, subsequent_indent="    ")
        lines += textwrap.wrap(
            f"fix{rule}: {escape(f.fix)}", WIDTH, initial_indent="    ", subsequent_indent="      "
        )
        for loc in f.locations[:5]:
            lines.append(f"    at {escape(loc)}")
    return lines


def mfu_line(m: dict | None, label: str = "MFU") -> list[str]:
    """One line for an ``mfu`` record (contracts §10), or none without one."""
    if not m:
        return []
    if m.get("mfu") is None:
        return [f"{label}: not computed ({escape(m.get('reason') or 'no peak')})"]
    dtype = m["dtype"] + (" (default; --dtype)" if m.get("dtype_source") == "default" else "")
    line = (
        f"{label}: {100 * m['mfu']:.1f}% ({m['flops_per_step']:.3g} FLOPs per step and rank over "
        f"{us(m['step_us'])}, {escape(m['chip'])} peak {m['peak_flops'] / 1e12:.4g} TFLOPS {dtype})"
    )
    return [line] + ([f"  {escape(m['note'])}"] if m.get("note") else [])


def _mfu(report: Report) -> list[str]:
    return mfu_line(report.mfu)


def _compare(report: Report) -> list[str]:
    c = report.compare
    if not c:
        return []
    lines = [f"compared with the reference {escape(', '.join(c.get('ref_paths', [])))}:"]
    lines += [f"  {escape(line)}" for line in c.get("summary", [])]
    lines += [f"  {line}" for line in mfu_line(c.get("ref_mfu"), "reference MFU")]
    if c.get("ops"):
        lines.append("  operators by device time lost per step (framework op: run vs reference)")
    for op in c.get("ops", [])[:10]:
        lines.append(
            f"  {escape(op['op'])[:40]:<40} {us(op['us']):>10} vs {us(op['ref_us']):>10}"
            f"  lost {us(op['lost_us'])} per step"
        )
    lines += [f"  note: {escape(n)}" for n in c.get("notes", [])]
    return lines


def render_text(report: Report) -> str:
    lines = ["migrate perf: " + ", ".join(sorted({p.kind for p in report.profiles})) + " profile(s)"]
    lines += _profiles(report)
    if report.steps:
        lines += ["", "step breakdown"] + _steps(report)
    if any(r.top_ops for r in report.ranks):
        lines += ["", "top operators (device time in the profiled steps)"] + _top_ops(report)
    lines += [""] + (_findings(report) or ["no findings"])
    extra = _mfu(report) + _compare(report)
    if extra:
        lines += [""] + extra
    notes = report.to_json()["notes"]
    if notes:
        lines += ["", "notes:"] + [f"  - {escape(n)}" for n in notes]
    if report.gate:
        g = report.gate
        lines += [""]
        lines += [f"FAIL {escape(v)}" for v in g["violations"]] or ["PASS the --fail-on gate"]
    return "\n".join(lines) + "\n"
