"""Renderers for comparison results: one function per format."""

from __future__ import annotations

from dataclasses import replace

from migrate.core.display import escape_lines, escape_strings
from migrate.precision.report.html import render_html
from migrate.precision.report.text import render_json, render_junit, render_markdown, render_text

_FROM_DUMPS = (
    "entries",
    "first_divergence",
    "violations",
    "reference",
    "target",
    "culprit",
    "weights",
    "ranks",
    "inconclusive",
    "replay_command",
)


def _printable(render):
    """Text, Markdown and HTML carry layer names from a dump: every string the dumps gave
    is escaped before rendering (a name cannot start a line of its own), and what is left of
    control characters, bidi overrides and lone surrogates after (JSON escapes them itself,
    JUnit in its renderer)."""

    def printable(result):
        safe = replace(result, **{k: escape_strings(getattr(result, k)) for k in _FROM_DUMPS})
        return escape_lines(render(safe))

    return printable


RENDERERS = {
    "text": _printable(render_text),
    "json": render_json,
    "junit": render_junit,
    "markdown": _printable(render_markdown),
    "html": _printable(render_html),
}

__all__ = ["RENDERERS"]
