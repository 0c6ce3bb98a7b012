"""A bytes regex that every file with a possible finding must match.

Built from the rule table itself: a use of ``torch.cuda.synchronize`` must spell every
segment of the name somewhere in the file (in the import or the attribute chain), so the
most specific segment of each key is a sound token. Kinds that match literals declare
``params.prefilter`` tokens.
"""

from __future__ import annotations

import re
from functools import lru_cache

from migrate.rules import Rule

# Segments too common to be useful as tokens.
_COMMON = {
    "torch", "nn", "utils", "functional", "distributed", "optim", "ops", "backends", "amp",
    "matmul", "modules", "data", "models", "module", "parallel", "__init__",
}


def _key_token(key: str) -> str:
    segs = [s for s in key.removesuffix(".*").split(".") if s]
    for seg in segs:
        if seg not in _COMMON:
            return seg
    return segs[-1]


def rule_tokens(rule: Rule) -> set[str]:
    p = rule.params
    tokens = set(p.get("prefilter") or ())
    if rule.kind == "qualified-name":
        tokens |= {_key_token(k) for k in (p.get("names") or {})}
    elif rule.kind == "method-rename":
        tokens |= set(p.get("attrs") or {})
    elif rule.kind == "missing-argument":
        tokens |= {_key_token(k.rsplit(".", 1)[-1]) for k in (p.get("calls") or {})}
    elif rule.kind == "env-var":
        tokens |= set(p.get("vars") or {})
        raw = p.get("prefixes") or {}
        tokens |= set(raw if isinstance(raw, (list, tuple)) else raw.keys())
    return {t for t in tokens if t}


def minimal_tokens(tokens: set[str]) -> list[str]:
    """Drop tokens that contain another token: a file holding them holds the shorter one."""
    kept = [t for t in tokens if not any(o != t and o in t for o in tokens)]
    return sorted(kept, key=len, reverse=True)


class Prefilter:
    """``search(data)`` is truthy when data holds any token. Few tokens: bytes.find (memmem,
    much faster than a regex alternation); many: one regex."""

    def __init__(self, tokens: list[str]):
        self.tokens = [t.encode() for t in tokens]
        self.pattern = re.compile(b"|".join(re.escape(t) for t in self.tokens) or b"(?!)")
        self._few = len(self.tokens) <= 24

    def search(self, data: bytes) -> bool:
        if self._few:
            return any(t in data for t in self.tokens)
        return self.pattern.search(data) is not None


@lru_cache(maxsize=8)
def python_prefilter(rules: tuple[Rule, ...]) -> Prefilter | None:
    """None means: no sound prefilter (some python rule declares no tokens); read every file."""
    tokens: set[str] = set()
    for rule in rules:
        if "python" not in rule.files:
            continue
        t = rule_tokens(rule)
        if not t:
            return None
        tokens |= t
    return Prefilter(minimal_tokens(tokens))


@lru_cache(maxsize=8)
def python_hit_pattern(rules: tuple[Rule, ...]) -> re.Pattern[str] | None:
    """The same tokens as a text regex: lines without a hit are not walked."""
    pattern = python_prefilter(rules)
    return None if pattern is None else re.compile(pattern.pattern.pattern.decode())
