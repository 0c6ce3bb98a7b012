"""The pictures of the perf report: stacked step breakdowns (per rank and step, and per rank),
and top-operator bars; inline SVG for HTML, block-character bars for Markdown and text.

Each bar is scaled to the longest one of its chart, so steps and ranks compare at a glance;
segments are computing, communication not overlapped, free (the breakdown's three parts)."""

from __future__ import annotations

from html import escape as html_escape

from migrate.core.display import escape
from migrate.perf.model import OpRow, Report, StepBreakdown

__all__ = ["PARTS", "op_bars_svg", "rank_rows", "stacked_svg", "text_bar"]

PARTS = (
    ("computing_us", "computing", "#1565c0", "█"),
    ("communication_not_overlapped_us", "comm not overlapped", "#ef6c00", "▓"),
    ("free_us", "free", "#bdbdbd", "░"),
)
MAX_BARS = 40
W, LABEL_W, BAR_H, GAP = 900, 190, 14, 4


def rank_rows(report: Report) -> list[tuple[str, dict[str, float]]]:
    """Each rank's mean step, by part (ranks with no timed step left out)."""
    rows = []
    for r in report.ranks:
        steps = [s for s in r.steps if s.total_us > 0]
        if steps:
            label = f"rank {r.rank}" if r.rank is not None else r.profile.path[-24:]
            rows.append((label, {key: sum(getattr(s, key) for s in steps) / len(steps) for key, *_ in PARTS}))
    return rows


def step_rows(steps: list[StepBreakdown]) -> list[tuple[str, dict[str, float]]]:
    rows = []
    for s in steps[:MAX_BARS]:
        if s.total_us > 0:
            owner = f"rank {s.rank} " if s.rank is not None else ""
            label = owner + (f"step {s.step}" if s.step is not None else "all")
            rows.append((label, {key: getattr(s, key) for key, *_ in PARTS}))
    return rows


def _legend(y: int) -> str:
    out, x = [], LABEL_W
    for _, name, color, _ in PARTS:
        out.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 14}" y="{y + 9}" font-size="11">{name}</text>')
        x += 30 + 7 * len(name)
    return "".join(out)


def stacked_svg(rows: list[tuple[str, dict[str, float]]], title: str) -> str:
    """Horizontal stacked bars, one per row (label, {part: us}); '' when there is no row."""
    if not rows:
        return ""
    longest = max(sum(parts.values()) for _, parts in rows) or 1.0
    height = 24 + len(rows) * (BAR_H + GAP) + 20
    out = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" role="img">',
        f"<title>{html_escape(title)}</title>",
        _legend(4),
    ]
    for k, (label, parts) in enumerate(rows):
        y = 24 + k * (BAR_H + GAP)
        out.append(f'<text x="0" y="{y + 11}" font-size="11">{html_escape(escape(label))[:32]}</text>')
        x = float(LABEL_W)
        for key, name, color, _ in PARTS:
            width = (W - LABEL_W - 80) * parts[key] / longest
            if width > 0:
                out.append(
                    f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="{BAR_H}" fill="{color}">'
                    f"<title>{name}: {parts[key]:.1f} us</title></rect>"
                )
            x += width
        total_ms = sum(parts.values()) / 1e3
        out.append(f'<text x="{x + 4:.1f}" y="{y + 11}" font-size="11">{total_ms:.3g} ms</text>')
    out.append("</svg>")
    return "".join(out)


def op_bars_svg(ops: list[OpRow], limit: int = 15) -> str:
    """Bars of the top operators' device time (one rank's rows), longest first."""
    rows = ops[:limit]
    if not rows:
        return ""
    longest = max(o.total_us for o in rows) or 1.0
    height = len(rows) * (BAR_H + GAP) + 8
    out = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" role="img">']
    for k, o in enumerate(rows):
        y = 4 + k * (BAR_H + GAP)
        label = html_escape(escape(f"{o.type} ({o.core})"))[:40]
        width = (W - LABEL_W - 80) * o.total_us / longest
        out.append(f'<text x="0" y="{y + 11}" font-size="11">{label}</text>')
        out.append(f'<rect x="{LABEL_W}" y="{y}" width="{width:.1f}" height="{BAR_H}" fill="#1565c0"/>')
        out.append(
            f'<text x="{LABEL_W + width + 4:.1f}" y="{y + 11}" font-size="11">'
            f"{o.total_us / 1e3:.3g} ms, {100 * o.share:.1f}%</text>"
        )
    out.append("</svg>")
    return "".join(out)


def text_bar(parts: dict[str, float], longest: float, width: int = 40) -> str:
    """A stacked bar of block characters (█ computing, ▓ comm not overlapped, ░ free)."""
    out = []
    for key, _, _, char in PARTS:
        out.append(char * round(width * parts[key] / longest) if longest > 0 else "")
    return "".join(out)
