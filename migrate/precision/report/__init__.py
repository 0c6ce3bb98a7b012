"""Renderers for comparison results: one function per format."""

from __future__ import annotations

from migrate.precision.report.html import render_html
from migrate.precision.report.text import render_json, render_junit, render_markdown, render_text

RENDERERS = {"text": render_text, "json": render_json, "junit": render_junit,
             "markdown": render_markdown, "html": render_html}

__all__ = ["RENDERERS"]
