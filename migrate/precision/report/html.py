"""Self-contained HTML report (jinja2 template, inline SVG plot and a small inline script
for filtering and sorting; no external assets). Rows come failures first."""

from __future__ import annotations

from pathlib import Path

from migrate.precision.report.plot import error_plot
from migrate.precision.report.text import failures_first, locus_line, rank_lines, summary_line, used_columns

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def render_html(result) -> str:
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=jinja2.select_autoescape(["html", "j2"])
    )
    env.globals["format"] = format
    marker = result.culprit if result.replay else result.first_divergence
    panel = result.first_divergence if not result.replay else None
    if result.replay and result.culprit:
        panel = {
            **result.culprit,
            "reason": next((e["reason"] for e in result.entries if e["status"] == "fail"), ""),
            "detail": [],
        }
    return env.get_template("report.html.j2").render(
        r=result,
        verdict="PASS" if result.passed else "FAIL",
        summary=summary_line(result),
        locus=locus_line(result),
        plot=Markup(error_plot(result.entries, marker)),
        entries=failures_first(result.entries),
        columns=used_columns(result.entries),
        panel=panel,
        ranks=rank_lines(result),
    )
