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


@lru_cache(maxsize=8)
def python_prefilter(rules: tuple[Rule, ...]) -> re.Pattern[bytes] | None:
    """None means: no sound prefilter (some python rule declares no tokens); read every file."""
    tokens: set[str] = set()
    for rule in rules:
        if "python" not in rule.files:
            continue
        t = rule_tokens(rule)
        if not t:
            return None
        tokens |= t
    if not tokens:
        return re.compile(rb"(?!)")
    alternatives = sorted((re.escape(t.encode()) for t in tokens), key=len, reverse=True)
    return re.compile(b"|".join(alternatives))
