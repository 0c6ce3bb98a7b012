"""Renderers of a perf Report, one module per format, found by name."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from migrate.core.strict_json import dumps
from migrate.perf.model import Report

FORMATS = ("text", "json", "markdown", "html")


def render(report: Report, fmt: str) -> str:
    """The report in format ``fmt`` (one of FORMATS)."""
    if fmt == "json":
        return dumps(report.to_json(), indent=2, default=str) + "\n"
    module = importlib.import_module(f"migrate.perf.render.{fmt}")
    fn: Callable[[Report], str] = getattr(module, f"render_{fmt}")
    return fn(report)
