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
    summary = result.summary()
    if effort is not None:
        from migrate.report.effort import estimate

        summary["effort"] = estimate(result.findings, effort).to_json()
    return {
        "tool": {"name": TOOL_NAME, "version": __version__},
        "findings": [f.to_json() for f in sorted_findings(result.findings)],
        "errors": [e.to_json() for e in sorted(result.errors, key=lambda e: e.path)],
        "summary": summary,
    }


def render_json(result: ScanResult, effort=None) -> str:
    return json.dumps(to_dict(result, effort), indent=2, ensure_ascii=False) + "\n"


def render_statistics_json(result: ScanResult, rules: Sequence[Rule]) -> str:
    """--statistics --format json: [{code, name, count, fix}], most frequent first."""
    return json.dumps(statistics_rows(result.findings, rules), indent=2) + "\n"
