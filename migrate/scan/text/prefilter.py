"""Cheap per-rule prefilter: skip a rule unless one of its trigger words is in the file.

Triggers come from the rule data, so a new row needs no code:

* ``env-var``: its variable names and prefixes;
* ``dependency``: the longest alphanumeric run of each package name or glob
  (``flash-attn`` -> ``flash``, which also covers ``flash_attn``);
* ``shell-command``: ``params.prefilter`` (a list of words one of which every match
  contains); without it the rule always runs.

Words are compared case-insensitively against the lower-cased text. Most files of a project
contain none, and then neither comment masking nor any regex runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from migrate.core.rules import Rule

_ALNUM = re.compile(r"[a-z0-9]+")
_GLOB_CLASS = re.compile(r"\[[^\]]*\]")
_cache: dict[int, tuple[Rule, tuple[str, ...] | None]] = {}


def triggers(rule: Rule) -> tuple[str, ...] | None:
    """Lower-case words of which a file must contain one for ``rule`` to match; None = any."""
    hit = _cache.get(id(rule))
    if hit is not None and hit[0] is rule:
        return hit[1]
    words = _derive(rule)
    _cache[id(rule)] = (rule, words)
    return words


def _derive(rule: Rule) -> tuple[str, ...] | None:
    params = rule.params
    if rule.kind == "env-var":
        names = list(params.get("vars") or {}) + list(params.get("prefixes") or {})
        return tuple(sorted({str(n).lower() for n in names}))
    if rule.kind == "dependency":
        words = set()
        for name in params.get("packages") or {}:
            chunks = _ALNUM.findall(_GLOB_CLASS.sub("-", str(name).lower()))
            if not chunks:
                return None
            words.add(max(chunks, key=len))
        return tuple(sorted(words))
    if rule.kind == "shell-command" and params.get("prefilter"):
        return tuple(sorted({str(w).lower() for w in params["prefilter"]}))
    return None


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
