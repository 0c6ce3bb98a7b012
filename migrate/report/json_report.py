"""JSON report: the scan contract of docs/contracts.md §3 (tool, findings, errors, summary)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from migrate import __version__
from migrate.core.findings import ScanResult
from migrate.core.rules import Rule
from migrate.report.common import sorted_findings, statistics_rows

TOOL_NAME = "ascend-migrate"


def to_dict(result: ScanResult, effort=None) -> dict:
    """``effort``: an EffortModel (or a rule map) for ``summary.effort``; omitted if None."""
    return {
        "tool": {"name": TOOL_NAME, "version": __version__},
        "findings": [f.to_json() for f in sorted_findings(result.findings)],
        "errors": [e.to_json() for e in sorted(result.errors, key=lambda e: e.path)],
        "summary": _summary(result, effort),
    }


def render_json(result: ScanResult, effort=None) -> str:
    """``json.dumps(to_dict(...), indent=2)``, made one finding at a time: json's indenting
    encoder is pure Python and keeps a string per token of the whole document (1 GB for the
    200k findings of a 2.6 MB file); per finding, only one finding's tokens live at once."""
    doc = {
        "tool": {"name": TOOL_NAME, "version": __version__},
        "findings": None,  # written item by item below
        "errors": [e.to_json() for e in sorted(result.errors, key=lambda e: e.path)],
        "summary": _summary(result, effort),
    }
    items = (json.dumps(f.to_json(), indent=2, ensure_ascii=False) for f in sorted_findings(result.findings))
    parts = []
    for i, (key, value) in enumerate(doc.items()):
        if key == "findings":
            body = ",\n    ".join(item.replace("\n", "\n    ") for item in items)
            text = f"[\n    {body}\n  ]" if body else "[]"
        else:
            text = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n  ")
        parts.append(f"  {json.dumps(key)}: {text}" + ("," if i < len(doc) - 1 else ""))
    return "{\n" + "\n".join(parts) + "\n}\n"


def _summary(result: ScanResult, effort) -> dict:
    summary = result.summary()
    if effort is not None:
        from migrate.report.effort import estimate

        summary["effort"] = estimate(result.findings, effort).to_json()
    return summary


def render_statistics_json(result: ScanResult, rules: Sequence[Rule]) -> str:
    """--statistics --format json: [{code, name, count, fix}], most frequent first."""
    return json.dumps(statistics_rows(result.findings, rules), indent=2) + "\n"
