"""The doctor's checks, one registration each, discovered by walking this package:

    @CHECKS.register("torch-pin", group="python", order=40)
    def torch_pin(ctx: Context) -> Check: ...

``group`` is where the check is shown (report.GROUPS), ``order`` its place in the group. A
check reads facts from the :class:`~migrate.doctor.context.Context` (gathered once) and
returns one :class:`~migrate.doctor.report.Check` whose ``id`` is its registered name.
Adding a check is adding a function to a module here; nothing else lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from migrate.core.registry import Registry
from migrate.doctor.report import GROUPS


def _check(name: str, fn: Any, meta: dict[str, Any]) -> None:
    if not callable(fn):
        raise TypeError("a doctor check must be a function of the context")
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
