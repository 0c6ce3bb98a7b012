"""Cheap per-rule prefilter for text files: skip a rule unless one of its trigger words is in
the file. The words are the prefilter tokens its kind derives from the rule row
(migrate.core.kinds), compared case-insensitively; a kind that gives none always runs.
Most files of a project contain none, and then neither comment masking nor any regex runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from migrate.core.kinds import kind
from migrate.core.rules import Rule

_cache: dict[int, tuple[Rule, tuple[str, ...] | None]] = {}


def triggers(rule: Rule) -> tuple[str, ...] | None:
    """Lower-case words of which a file must contain one for ``rule`` to match; None = any."""
    hit = _cache.get(id(rule))
    if hit is not None and hit[0] is rule:
        return hit[1]
    spec = kind("text", rule.kind)
    words = tuple(sorted({t.literal.lower() for t in spec.tokens(rule, ())})) if spec else ()
    _cache[id(rule)] = (rule, words or None)
    return words or None


def active_rules(text: str, rules: Sequence[Rule]) -> list[Rule]:
    """The rules whose triggers occur in ``text``."""
    lower = None
    out = []
    for rule in rules:
        words = triggers(rule)
        if words is None:
            out.append(rule)
            continue
        if lower is None:
            lower = text.lower()
        if any(w in lower for w in words):
            out.append(rule)
    return out
