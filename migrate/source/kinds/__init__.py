"""Matcher families for Python files, registered by the rule ``kind`` they implement.

A kind is a function ``run(pyfile, rules)`` that receives every selected rule of its kind
at once (so tables from several rules can be merged, longest match first) and reports
findings on the PyFile. Registering a kind twice fails at import.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

from migrate.rules import Rule

KindFn = Callable[..., None]
_DISCOVERED = False
_KINDS: dict[str, KindFn] = {}


def python_kind(name: str) -> Callable[[KindFn], KindFn]:
    def register(fn: KindFn) -> KindFn:
        if name in _KINDS:
            raise ValueError(f"python kind {name!r} registered twice")
        _KINDS[name] = fn
        return fn

    return register


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
