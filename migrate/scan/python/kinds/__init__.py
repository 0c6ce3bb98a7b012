"""Matcher families for Python files, one module per rule ``kind``.

A kind is a function ``run(pyfile, rules)`` registered with
``@rule_kind(name, engine="python", params=..., tokens=...)`` (migrate.core.kinds); it
receives every selected rule of its kind at once (so tables from several rules can be
merged, longest match first) and reports findings on the PyFile. The registry finds the
modules of this package by itself: a new kind is a new module.
"""

from __future__ import annotations

import fnmatch

from migrate.core.kinds import kinds_of
from migrate.core.rules import Rule

_SELECTED: dict[tuple[int, frozenset], tuple[object, tuple[Rule, ...]]] = {}


def rules_for_path(rules, rel: str) -> tuple[Rule, ...]:
    """The rules that apply to the Python file ``rel`` (kinds may be limited by file name).

    Called for every file of a scan: the selection is memoised per (rule set, set of
    path-limited kinds that apply), so most files cost one basename match per glob."""
    limited = {k.name: k.paths for k in kinds_of("python") if k.paths}
    base = rel.rsplit("/", 1)[-1]
    applying = frozenset(name for name, globs in limited.items()
                         if any(fnmatch.fnmatch(base, p) for p in globs))
    key = (id(rules), applying)
    hit = _SELECTED.get(key)
    if hit is None or hit[0] is not rules:
        chosen = tuple(r for r in rules if r.kind not in limited or r.kind in applying)
        hit = _SELECTED[key] = (rules, chosen)
    return hit[1]
