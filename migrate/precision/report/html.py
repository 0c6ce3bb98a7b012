"""Self-contained HTML report (jinja2 template, inline SVG plot, no external assets)."""

from __future__ import annotations

from pathlib import Path

from migrate.precision.report.plot import error_plot
from migrate.precision.report.text import locus_line, summary_line

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def render_html(result) -> str:
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=jinja2.select_autoescape(["html", "j2"]))
    marker = result.culprit if result.replay else result.first_divergence
    return env.get_template("report.html.j2").render(
        r=result, verdict="PASS" if result.passed else "FAIL", summary=summary_line(result),
        locus=locus_line(result), plot=Markup(error_plot(result.entries, marker)),
        entries=result.entries)
