"""The doctor's checks, one registration each, discovered by walking this package:

    @CHECKS.register("torch-pin", group="python", order=40)
    def torch_pin(ctx: Context) -> Outcome: ...

The registered name is the check's id (stable, kebab-case), written there once: ``group`` is
where the check is shown (report.GROUPS), ``order`` its place in the group. A check reads
facts from the :class:`~migrate.doctor.context.Context` (gathered once) and returns an
:class:`~migrate.doctor.report.Outcome` (status, summary, evidence, fix, sources); the run
makes it the report's ``Check`` under the registered id and group. A second registration
of an id fails at load, naming both functions. Adding a check is adding a function to a
module here; nothing else lists them (docs/contracts.md §8 is generated from this registry
by tools/build_docs.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from migrate.core.registry import Registry, placeholders
from migrate.doctor.report import GROUPS

ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


def _check(name: str, fn: Any, meta: dict[str, Any]) -> None:
    if not ID.fullmatch(name):
        raise ValueError("a doctor check id is kebab-case: lower-case words joined by '-'")
    if not callable(fn):
        raise TypeError("a doctor check must be a function of the context")
    if placeholders(fn.__doc__ or ""):
        raise ValueError("is a scaffold: fill in its docstring and its body")
    unknown = set(meta) - {"group", "order"}
    if unknown:
        raise ValueError(f"unknown registration option(s) {sorted(unknown)}")
    if meta.get("group") not in GROUPS:
        raise ValueError(f"group must be one of {GROUPS}")
    if not isinstance(meta.get("order"), int):
        raise ValueError("order must be an int")


CHECKS: Registry[Callable] = Registry("doctor check", __name__, check=_check)


def ordered() -> list[tuple[str, Callable, dict[str, Any]]]:
    """(name, function, meta) in display order: by group, then order."""
    items = [(name, fn, CHECKS.meta(name)) for name, fn in CHECKS.items()]
    return sorted(items, key=lambda it: (GROUPS.index(it[2]["group"]), it[2]["order"], it[0]))


def ids_by_group() -> dict[str, list[str]]:
    """Every registered id, in display order, under its group (the docs' list)."""
    out: dict[str, list[str]] = {g: [] for g in GROUPS}
    for name, _, meta in ordered():
        out[meta["group"]].append(name)
    return {g: ids for g, ids in out.items() if ids}
