"""Matcher families for Python files, registered by the rule ``kind`` they implement.

A kind is a function ``run(pyfile, rules)`` that receives every selected rule of its kind
at once (so tables from several rules can be merged, longest match first) and reports
findings on the PyFile. Registering a kind twice fails at import.
"""

from __future__ import annotations

import fnmatch
import importlib
import pkgutil
from collections.abc import Callable

from migrate.core.rules import Rule

KindFn = Callable[..., None]
_DISCOVERED = False
_KINDS: dict[str, KindFn] = {}


# Kinds that only make sense in some files (setup.py), by file-name glob.
_PATHS: dict[str, tuple[str, ...]] = {}


def python_kind(name: str, paths: tuple[str, ...] | None = None) -> Callable[[KindFn], KindFn]:
    def register(fn: KindFn) -> KindFn:
        if name in _KINDS:
            raise ValueError(f"python kind {name!r} registered twice")
        _KINDS[name] = fn
        if paths:
            _PATHS[name] = paths
        return fn

    return register


def rules_for_path(rules, rel: str) -> tuple[Rule, ...]:
    """The rules that apply to the Python file ``rel`` (kinds may be limited by file name).

    Called for every file of a scan: the selection is memoised per (rule set, set of
    path-limited kinds that apply), so most files cost one basename match per glob."""
    python_kinds()
    base = rel.rsplit("/", 1)[-1]
    applying = frozenset(k for k, globs in _PATHS.items()
                         if any(fnmatch.fnmatch(base, p) for p in globs))
    key = (id(rules), applying)
    hit = _SELECTED.get(key)
    if hit is None or hit[0] is not rules:
        chosen = tuple(r for r in rules if r.kind not in _PATHS or r.kind in applying)
        hit = _SELECTED[key] = (rules, chosen)
    return hit[1]


_SELECTED: dict[tuple[int, frozenset], tuple[object, tuple[Rule, ...]]] = {}


def python_kinds() -> dict[str, KindFn]:
    global _DISCOVERED
    if not _DISCOVERED:  # import every module once, even if one was imported directly
        _DISCOVERED = True
        for mod in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{mod.name}")
    return _KINDS


def group_by_kind(rules: list[Rule] | tuple[Rule, ...]) -> dict[str, list[Rule]]:
    groups: dict[str, list[Rule]] = {}
    for rule in rules:
        if "python" in rule.files:
            groups.setdefault(rule.kind, []).append(rule)
    return groups
