"""One registry type for every table of plug-in members: filled by a decorator, discovered
by walking a package, loud on a duplicate or an unusable member.

The pattern is torch._decomp's and pyupgrade's: a module registers its members with
``@REGISTRY.register("name")``; the registry imports every module of its package (sub-
packages included) the first time it is read, so adding a member is adding a file, never
editing a second list. ``check`` (given at construction) validates each member as it
registers, so a member the engine cannot use fails at import, naming itself.

Tests may point ``extra_paths`` (or a package's ``__path__``) at a temporary folder and call
:meth:`Registry.rediscover` to see a new member picked up with no other edit.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# What tools/new_rule.py writes where a person must fill in a scaffold (a rule row, a
# decomposition, a doctor check, a precision class). Every loader of those kinds refuses a
# member still holding it, naming where: a scaffold fails loudly until it is filled in.
PLACEHOLDER = "FILL IN (tools/new_rule.py)"


def placeholders(value: Any, where: str = "") -> list[str]:
    """The dotted paths inside ``value`` (strings, mappings, lists) whose text still holds
    :data:`PLACEHOLDER`; empty when the member is filled in."""
    if isinstance(value, str):
        return [where or "(the value)"] if PLACEHOLDER in value else []
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in placeholders(v, f"{where}.{k}" if where else str(k))]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in placeholders(v, f"{where}[{i}]")]
    return []


class RegistryError(ValueError):
    """A duplicate name, an unusable member, or a lookup of a name nobody registered."""


class Registry(Generic[T]):
    def __init__(
        self,
        what: str,
        package: str | tuple[str, ...],
        check: Callable[[str, T, dict[str, Any]], None] | None = None,
    ) -> None:
        self.what = what  # "rule kind", "fixer", "decomposition", ...: used in messages
        # dotted names of the packages (or single modules) whose modules hold the members
        self.packages = (package,) if isinstance(package, str) else tuple(package)
        self._check = check
        self._members: dict[str, T] = {}
        self._meta: dict[str, dict[str, Any]] = {}
        self._discovered = False

    # -- filling ---------------------------------------------------------------------------
    def register(self, name: str, **meta: Any) -> Callable[[T], T]:
        """Decorator: register the decorated object as ``name`` (with optional metadata)."""

        def wrap(member: T) -> T:
            self.add(name, member, **meta)
            return member

        return wrap

    def add(self, name: str, member: T, **meta: Any) -> None:
        if name in self._members:
            raise RegistryError(
                f"{self.what} {name!r} registered twice ({_where(self._members[name])} and {_where(member)})"
            )
        if self._check is not None:
            try:
                self._check(name, member, meta)
            except (TypeError, ValueError) as exc:
                raise RegistryError(f"{self.what} {name!r} ({_where(member)}): {exc}") from exc
        self._members[name] = member
        self._meta[name] = meta

    # -- discovery ---------------------------------------------------------------------------
    def discover(self) -> None:
        """Import every module of the packages once (sub-packages too)."""
        if self._discovered:
            return
        self._discovered = True
        for name in self.packages:
            pkg = importlib.import_module(name)
            for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), prefix=f"{name}."):
                importlib.import_module(info.name)

    def rediscover(self) -> None:
        """Walk the package again (after a test added a module to it)."""
        self._discovered = False
        self.discover()

    # -- reading ---------------------------------------------------------------------------
    def __getitem__(self, name: str) -> T:
        self.discover()
        try:
            return self._members[name]
        except KeyError:
            known = ", ".join(sorted(self._members)) or "none"
            raise RegistryError(f"unknown {self.what} {name!r} (known: {known})") from None

    def get(self, name: str, default: T | None = None) -> T | None:
        self.discover()
        return self._members.get(name, default)

    def meta(self, name: str) -> dict[str, Any]:
        self.discover()
        return self._meta[name]

    def __contains__(self, name: object) -> bool:
        self.discover()
        return name in self._members

    def __iter__(self) -> Iterator[str]:
        self.discover()
        return iter(list(self._members))

    def __len__(self) -> int:
        self.discover()
        return len(self._members)

    def items(self) -> list[tuple[str, T]]:
        self.discover()
        return list(self._members.items())

    def registered(self) -> list[T]:
        """The members registered so far, without walking the packages (for ``check``
        functions that compare a new member with the others)."""
        return list(self._members.values())

    def unregister(self, name: str) -> None:
        """Remove a member (tests that add one clean up after themselves)."""
        self._members.pop(name, None)
        self._meta.pop(name, None)


def _where(member: object) -> str:
    mod = getattr(member, "__module__", None) or type(member).__module__
    qual = getattr(member, "__qualname__", None) or type(member).__qualname__
    return f"{mod}.{qual}"
