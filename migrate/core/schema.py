"""Typed schemas for the data a rule row gives its kind (``params``, ``portable``): checked to
full depth when the rules load, then frozen.

A schema maps each key to a Param: the types its value may have and, for containers, what
they hold (``items`` of a list, ``values`` of a mapping, or the named ``fields`` of a
record), plus an optional ``check`` for what types cannot say (a regex that compiles, a name
from a fixed set). ``problem`` names the first value that breaks it by its path
(``params key 'names' ['torch.cuda.x']``), so a typo fails the load naming file, rule and
key instead of silently dropping findings. ``freeze`` turns the checked data read-only
(mappings become FrozenDict, lists tuples): a compiled RuleSet shared by every worker
cannot be changed by one matcher.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

NONE = type(None)
_NAMES = {
    dict: "mapping",
    list: "list",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    NONE: "null",
}


@dataclass(frozen=True)
class Param:
    """One key of a schema: the types its value may have and what a container holds."""

    types: tuple[type, ...]
    required: bool = False
    doc: str = ""
    items: Param | None = None  # every element of a list
    values: Param | None = None  # every value of a mapping (its keys are strings)
    fields: Mapping[str, Param] | None = None  # a mapping with these keys only (a record)
    check: Callable[[Any], str | None] | None = None  # a further check: the problem, or None

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool) and bool not in self.types:
            return False  # YAML's yes/no are not numbers or strings
        if isinstance(value, tuple) and list in self.types:
            return True  # a list, frozen
        return isinstance(value, self.types)

    def type_names(self) -> str:
        return " or ".join(_NAMES.get(t, t.__name__) for t in self.types)

    def problem(self, value: Any, path: str) -> str | None:
        """What is wrong with ``value`` (named by ``path``), to full depth; None if nothing."""
        if not self.accepts(value):
            names = self.type_names()
            article = "an" if names[0] in "aeiou" else "a"
            return f"{path} must be {article} {names}, not {type(value).__name__}"
        if isinstance(value, list | tuple) and self.items is not None:
            for i, item in enumerate(value):
                if (why := self.items.problem(item, f"{path} [{i}]")) is not None:
                    return why
        if isinstance(value, dict):
            if (why := self._mapping_problem(value, path)) is not None:
                return why
        if self.check is not None and (why := self.check(value)) is not None:
            return f"{path}: {why}"
        return None

    def _mapping_problem(self, value: dict, path: str) -> str | None:
        for key in value:
            if not isinstance(key, str):
                return f"{path}: key {key!r} must be a string"
        if self.fields is not None:
            return problems(self.fields, value, path, what="key")
        if self.values is not None:
            for key, item in value.items():
                if (why := self.values.problem(item, f"{path} [{key!r}]")) is not None:
                    return why
        return None


Schema = Mapping[str, Param]


def param(
    *types: type,
    required: bool = False,
    doc: str = "",
    items: Param | None = None,
    values: Param | None = None,
    fields: Mapping[str, Param] | None = None,
    check: Callable[[Any], str | None] | None = None,
) -> Param:
    return Param(tuple(types), required, doc, items, values, fields, check)


def strings(doc: str = "", required: bool = False, check: Callable[[Any], str | None] | None = None) -> Param:
    """A list of strings (each passing ``check``)."""
    return param(list, required=required, doc=doc, items=param(str, check=check))


def mapping(values: Param, doc: str = "", required: bool = False) -> Param:
    """A mapping of strings to ``values``."""
    return param(dict, required=required, doc=doc, values=values)


def record(doc: str = "", required: bool = False, **fields: Param) -> Param:
    """A mapping with the named keys only."""
    return param(dict, required=required, doc=doc, fields=fields)


def problems(schema: Schema, data: Mapping[str, Any], path: str, what: str) -> str | None:
    """The first problem of ``data`` against ``schema``: an unknown or missing key, or a value
    of the wrong shape. ``what`` names a key in messages ("params key", "portable key")."""
    for key, value in data.items():
        spec = schema.get(key)
        if spec is None:
            return (
                f"{path}: unknown {what} {key!r} (known: {', '.join(sorted(schema)) or 'none'})"
                if path
                else f"unknown {what} {key!r} (known: {', '.join(sorted(schema))})"
            )
        where = f"{path} [{key!r}]" if path else f"{what} {key!r}"
        if (why := spec.problem(value, where)) is not None:
            return why
    for key, spec in schema.items():
        if spec.required and key not in data:
            return f"{path} needs {what} {key!r}" if path else f"needs {what} {key!r}"
    return None


def regex(value: Any) -> str | None:
    """A check: the string compiles as a Python regular expression."""
    try:
        re.compile(value)
    except re.error as exc:
        return f"not a valid regular expression ({exc})"
    return None


def one_of(*choices: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in choices else f"{value!r} is not one of {', '.join(choices)}"

    return check


class FrozenDict(dict):
    """A mapping that cannot change after the rules load (a dict, so JSON and ``.get`` work)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("rule data is read-only once loaded")

    __setitem__ = __delitem__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]
    __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (FrozenDict, (dict(self),))


def freeze(value: Any) -> Any:
    """``value`` read-only to full depth: mappings become FrozenDict, lists tuples."""
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value
