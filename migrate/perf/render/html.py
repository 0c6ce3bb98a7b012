"""The HTML report of `migrate perf`: one self-contained page (jinja2 template, no external
assets) with the same sections as the text report. Autoescaped; every name from a profile
also goes through ``escape`` (control characters and bidi overrides shown as escapes)."""

from __future__ import annotations

from pathlib import Path

from migrate.core.display import escape
from migrate.perf.model import Report
from migrate.perf.render.charts import op_bars_svg, rank_rows, stacked_svg, step_rows
from migrate.perf.render.text import mfu_line, us

__all__ = ["render_html"]

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def render_html(report: Report) -> str:
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=jinja2.select_autoescape(["html", "j2"])
    )
    env.filters["us"] = us
    env.filters["safe_text"] = lambda v: escape(str(v))
    data = report.to_json()
    compare = report.compare or {}
    several = len(report.ranks) > 1
    return env.get_template("perf.html.j2").render(
        r=report,
        kinds=", ".join(sorted({p.kind for p in report.profiles})),
        mfu=mfu_line(report.mfu),
        ref_mfu=mfu_line(compare.get("ref_mfu"), "reference MFU"),
        compare=compare,
        notes=data["notes"],
        gate=report.gate,
        step_chart=Markup(stacked_svg(step_rows(report.steps), "step breakdown per rank and step")),
        rank_chart=Markup(stacked_svg(rank_rows(report), "mean step per rank") if several else ""),
        op_charts=[(r.rank, Markup(op_bars_svg(r.top_ops))) for r in report.ranks if r.top_ops],
    )
