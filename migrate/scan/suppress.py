"""Suppression comments: ``# migrate: ignore[MIG101,MIG201]`` or bare ``# migrate: ignore``.

The comment sits on the line a finding starts on (any file kind that uses ``#`` comments).
"""

from __future__ import annotations

import re

_IGNORE = re.compile(r"#\s*migrate:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s-]*)\])?")


def suppressed_codes(line: str) -> set[str] | None:
    """None if the line has no suppression; an empty set means 'all rules'."""
    m = _IGNORE.search(line)
    if not m:
        return None
    codes = m.group("codes")
    if codes is None:
        return set()
    return {c.strip() for c in codes.split(",") if c.strip()}


def is_suppressed(line: str, code: str, name: str = "") -> bool:
    codes = suppressed_codes(line)
    if codes is None:
        return False
    return not codes or code in codes or (bool(name) and name in codes)
