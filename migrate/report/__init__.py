"""Reports: one renderer module per output format of `migrate scan`.

``render(result, fmt, rules)`` returns the whole report as a string; the caller writes it.
Formats: text (ruff-like, optionally ``statistics``), json (docs/contracts.md §3 contract), sarif
(SARIF 2.1.0 for GitHub code scanning), markdown (PR comment), github (workflow
annotations).
"""

from __future__ import annotations

import pathlib
from collections.abc import Sequence

from migrate.core.findings import ScanResult
from migrate.core.rules import Rule

FORMATS = ("text", "json", "sarif", "markdown", "github")


def render(
    result: ScanResult,
    fmt: str,
    rules: Sequence[Rule],
    *,
    root: pathlib.Path | None = None,
    statistics: bool = False,
    color: bool = False,
    width: int | None = None,
    effort=None,
) -> str:
    """Render ``result`` in format ``fmt``. ``root`` is the folder finding paths are
    relative to (used to read source lines a finding has no snippet for). With
    ``statistics`` text and json give per-rule counts instead of findings (as ruff's
    --statistics); other formats ignore it. ``effort`` is the EffortModel to price the
    findings with (default: the rules' own figures). Raises ValueError for an unknown format."""
    if effort is None:
        from migrate.report.effort import EffortModel

        effort = EffortModel({r.code: r for r in rules})
    if fmt == "text":
        from migrate.report import text

        if statistics:
            return text.render_statistics(result, rules, color=color, width=width)
        return text.render_text(result, rules, root=root, color=color, width=width, effort=effort)
    if fmt == "json":
        from migrate.report.json_report import render_json, render_statistics_json

        return render_statistics_json(result, rules) if statistics else render_json(result, effort)
    if fmt == "sarif":
        from migrate.report.sarif import render_sarif

        return render_sarif(result, rules, root)
    if fmt == "markdown":
        from migrate.report.markdown import render_markdown

        return render_markdown(result, rules, effort)
    if fmt == "github":
        from migrate.report.github import render_github

        return render_github(result, root)
    raise ValueError(f"unknown report format {fmt!r} (choose from {', '.join(FORMATS)})")
