"""Report renderers (placeholder until the full renderers land): JSON only."""

from __future__ import annotations

import json

from migrate import __version__


def render(result, fmt, rules, *, root=None, statistics=False, color=False, width=None) -> str:
    doc = {
        "tool": {"name": "ascend-migrate", "version": __version__},
        "findings": [f.to_json() for f in result.findings],
        "errors": [e.to_json() for e in result.errors],
        "summary": result.summary(),
    }
    return json.dumps(doc, indent=2)
