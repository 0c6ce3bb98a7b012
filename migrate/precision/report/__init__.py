"""Renderers for comparison results: one function per format."""

from __future__ import annotations

from migrate.core.display import escape_lines
from migrate.precision.report.html import render_html
from migrate.precision.report.text import render_json, render_junit, render_markdown, render_text


def _printable(render):
    """Text, Markdown and HTML carry layer names from a dump: control characters, bidi
    overrides and lone surrogates escaped (JSON escapes them itself, JUnit in its renderer)."""
    return lambda result: escape_lines(render(result))


RENDERERS = {"text": _printable(render_text), "json": render_json, "junit": render_junit,
             "markdown": _printable(render_markdown), "html": _printable(render_html)}

__all__ = ["RENDERERS"]
