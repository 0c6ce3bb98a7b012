"""Suppression comments: ``# migrate: ignore[MIG101,MIG201]`` or bare ``# migrate: ignore``.

The comment sits on the line a finding starts on (any file kind that uses ``#`` comments).
:func:`drop_suppressed` is the one check: both engines run it on their findings.
"""

from __future__ import annotations

import re

from migrate.core.findings import Finding, LineIndex

_IGNORE = re.compile(r"#\s*migrate:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s-]*)\])?")


def suppressed_codes(line: str) -> set[str] | None:
    """None if the line has no suppression; an empty set means 'all rules'."""
    if "#" not in line:
        return None
    m = _IGNORE.search(line)
    if not m:
        return None
    codes = m.group("codes")
    if codes is None:
        return set()
    return {c.strip() for c in codes.split(",") if c.strip()}


def drop_suppressed(findings: list[Finding], index: LineIndex) -> list[Finding]:
    """The findings not silenced by a comment on the line they start on."""
    by_line: dict[int, set[str] | None] = {}
    kept = []
    for f in findings:
        if f.line not in by_line:
            by_line[f.line] = suppressed_codes(index.line_text(f.line))
        codes = by_line[f.line]
        if codes is None or (codes and f.rule not in codes and f.name not in codes):
            kept.append(f)
    return kept
