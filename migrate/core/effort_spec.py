"""The effort fields of a rule row, and their defaults (rules/effort_defaults.yaml).

A rule row may carry::

    effort:
      minutes: 60              # one work package; or by category {auto: 2, assisted: 15, manual: 60}
      per: symbol              # what one package is: project | library | file | symbol
      each_file: 10            # extra minutes for each further file in a library/project package
      library: flash_attn      # package name for per: library (default: the symbol's top module)
      group: migrate-apply     # rules of one group share packages (default: the rule itself)
      title: "..."             # the package's name in the table (default: the group or rule)
      why: "..."               # what the figure covers, shown in the effort table

Anything a row leaves out comes from the defaults for the finding's category. ``per``:
``symbol`` is one package per unique symbol per file (a qualified name, a literal, a
package); ``file`` one per rule and file; ``library`` one per library across the project;
``project`` one per group across the project.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Any

PER = ("project", "library", "file", "symbol")
_KEYS = {"minutes", "per", "each_file", "library", "group", "why", "title"}
_CATEGORIES = ("auto", "assisted", "manual", "perf")


class EffortError(ValueError):
    pass


@dataclass(frozen=True)
class EffortSpec:
    """Resolved effort of one rule for one category."""

    minutes: float
    per: str = "symbol"
    each_file: float = 0.0
    library: str = ""
    group: str = ""
    why: str = ""
    title: str = ""


def _number(value: Any, where: str) -> float:
    if (
        isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e9
    ):  # NaN and infinity fail this too
        raise EffortError(f"{where}: want a number of minutes >= 0, got {value!r}")
    return float(value)


def check_effort(raw: Any, where: str) -> None:
    """Raise EffortError (a ValueError) naming ``where`` if ``raw`` is not a valid effort row."""
    if not isinstance(raw, dict):
        raise EffortError(f"{where}: want a mapping, got {type(raw).__name__}")
    unknown = set(raw) - _KEYS
    if unknown:
        raise EffortError(f"{where}: unknown keys {sorted(unknown)}")
    minutes = raw.get("minutes")
    if isinstance(minutes, dict):
        bad = set(minutes) - set(_CATEGORIES)
        if bad:
            raise EffortError(f"{where}.minutes: unknown categories {sorted(bad)}")
        for cat, value in minutes.items():
            _number(value, f"{where}.minutes.{cat}")
    elif minutes is not None:
        _number(minutes, f"{where}.minutes")
    if "per" in raw and raw["per"] not in PER:
        raise EffortError(f"{where}.per: {raw['per']!r} is not one of {', '.join(PER)}")
    if "each_file" in raw:
        _number(raw["each_file"], f"{where}.each_file")
    for key in ("library", "group", "why", "title"):
        if key in raw and not isinstance(raw[key], str):
            raise EffortError(f"{where}.{key}: want a string")


def merge(base: EffortSpec, raw: dict, category: str) -> EffortSpec:
    """``base`` with the fields ``raw`` (a checked effort row) sets for ``category``."""
    changes: dict[str, Any] = {}
    minutes = raw.get("minutes")
    if isinstance(minutes, dict):
        if category in minutes:
            changes["minutes"] = float(minutes[category])
    elif minutes is not None:
        changes["minutes"] = float(minutes)
    for key in ("per", "library", "group", "why", "title"):
        if key in raw:
            changes[key] = raw[key]
    if "each_file" in raw:
        changes["each_file"] = float(raw["each_file"])
    return replace(base, **changes)


@dataclass(frozen=True)
class Defaults:
    categories: dict[str, EffortSpec]
    impacts: dict[str, float]  # impacts that cost a fixed figure (noop: 0)
    guarded_factor: float
    npu_aware_factor: float
    oldest_torch: str = "2.1.0"  # guards for an older torch never run (scan/python/dead_code.py)
    notebook: EffortSpec | None = None  # suggested edits made by hand in a notebook


@cache
def defaults() -> Defaults:
    import yaml

    from migrate.core.resources import rules_dir

    path = rules_dir() / "effort_defaults.yaml"
    data = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("effort") or {}
    cats = {}
    for cat in _CATEGORIES:
        raw = (data.get("categories") or {}).get(cat)
        if raw is None:
            raise EffortError(f"{path.name}: effort.categories lacks {cat}")
        check_effort(raw, f"{path.name}: effort.categories.{cat}")
        cats[cat] = merge(EffortSpec(0.0), raw, cat)
    impacts = {
        k: _number(v, f"{path.name}: effort.impacts.{k}") for k, v in (data.get("impacts") or {}).items()
    }
    return Defaults(
        cats,
        impacts,
        _number(data.get("guarded_factor", 1.0), f"{path.name}: guarded_factor"),
        _number(data.get("npu_aware_factor", 0.0), f"{path.name}: npu_aware_factor"),
        _version(data.get("oldest_torch", "2.1.0"), f"{path.name}: oldest_torch"),
        _notebook(data.get("notebook"), f"{path.name}: effort.notebook"),
    )


def _notebook(raw: Any, where: str) -> EffortSpec | None:
    if raw is None:
        return None
    check_effort(raw, where)
    return merge(EffortSpec(0.0), raw, "manual")


def _version(value: Any, where: str) -> str:
    from packaging.version import InvalidVersion, Version

    try:
        if not isinstance(value, str):
            raise InvalidVersion(repr(value))
        Version(value)
    except InvalidVersion:
        raise EffortError(f'{where}: want a version string such as "2.1.0", got {value!r}') from None
    return value
