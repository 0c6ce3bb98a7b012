"""Inline SVG of the per-layer error (1 - cosine and mismatch ratio, log scale), with the
module names on the x axis."""

from __future__ import annotations

import math
from html import escape

W, H, PAD_L, PAD_R, PAD_T, PAD_B = 960, 380, 60, 20, 20, 140
LO, HI = -16, 0  # log10 range of the y axis
COLORS = {"pass": "#2e7d32", "warn": "#f9a825", "fail": "#c62828", "missing": "#757575"}
MAX_LABELS = 40


def _y(value: float | None) -> float:
    v = LO if not value or value <= 0 else max(LO, min(HI, math.log10(value)))
    return PAD_T + (HI - v) / (HI - LO) * (H - PAD_T - PAD_B)


def _series(points: list[tuple[float, float]], color: str, name: str) -> str:
    if not points:
        return ""
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return (
        f'<polyline class="series" data-series="{name}" fill="none" stroke="{color}" '
        f'stroke-width="1.5" points="{path}"/>'
    )


def _short(name: str, limit: int = 28) -> str:
    return name if len(name) <= limit else "…" + name[-(limit - 1) :]


def _labels(xs: list[float], rows: list[dict], marker: dict | None) -> list[str]:
    step = max(1, math.ceil(len(rows) / MAX_LABELS))
    out = []
    for i, (x, e) in enumerate(zip(xs, rows, strict=True)):
        marked = marker and (e["name"], e["call"]) == (marker["name"], marker["call"])
        if i % step and not marked and e["status"] != "fail":
            continue
        y = H - PAD_B + 6
        style = ' font-weight="bold" fill="#c62828"' if marked else ""
        out.append(
            f'<text class="xlabel" x="{x:.1f}" y="{y}" font-size="9" '
            f'transform="rotate(60 {x:.1f} {y})"{style}>'
            f"{escape(_short(e['name']))}</text>"
        )
    return out


def error_plot(entries: list[dict], marker: dict | None = None) -> str:
    """SVG with one x position per compared forward output, in execution order."""
    rows = [e for e in entries if e["kind"] == "forward.output" and e.get("cosine") is not None]
    n = max(len(rows), 2)
    step = (W - PAD_L - PAD_R) / (n - 1)
    xs = [PAD_L + i * step for i in range(len(rows))]
    cos = [(x, _y(1.0 - e["cosine"])) for x, e in zip(xs, rows, strict=True)]
    mm = [(x, _y(e.get("mismatch_ratio"))) for x, e in zip(xs, rows, strict=True)]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="error-plot" width="100%" '
        f'viewBox="0 0 {W} {H}" role="img">',
        "<title>Per-layer error, execution order</title>",
    ]
    for k in range(LO, HI + 1, 2):
        y = _y(10.0**k)
        parts.append(f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{PAD_L - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">1e{k}</text>')
    for x, e in zip(xs, rows, strict=True):
        if marker and (e["name"], e["call"]) == (marker["name"], marker["call"]):
            parts.append(
                f'<line class="divergence" x1="{x:.1f}" x2="{x:.1f}" y1="{PAD_T}" '
                f'y2="{H - PAD_B}" stroke="#c62828" stroke-dasharray="4 3"/>'
            )
    parts.append(_series(cos, "#1565c0", "one_minus_cosine"))
    parts.append(_series(mm, "#8e24aa", "mismatch_ratio"))
    for (x, y), e in zip(cos, rows, strict=True):
        tip = escape(f"{e['name']}#{e['call']}[{e['index']}] {e['status']} cos={e['cosine']:.8f}")
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{COLORS[e["status"]]}">'
            f"<title>{tip}</title></circle>"
        )
    parts += _labels(xs, rows, marker)
    parts.append(
        f'<text x="{PAD_L}" y="{PAD_T - 6}" font-size="11">blue: 1 - cosine, '
        "purple: mismatch ratio; dots coloured by verdict; dashed: first "
        "divergence / culprit</text>"
    )
    parts.append("</svg>")
    return "\n".join(p for p in parts if p)
