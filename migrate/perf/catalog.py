"""The finding catalog (data/findings.yaml) and the detectors that produce its findings.

A detector is a function in a module of migrate/perf/detectors/, registered with
``@detector("PERF101")`` (``scope="rank"``: called with one rank's
:class:`~migrate.perf.analyze.context.RankContext`; ``scope="cluster"``: with every rank's
results). The catalog is checked when it loads: each row's fields and types, unique IDs and
names, every ``rule`` a code of the shipped rule table, every row whose ``sources`` include
``profile`` served by a registered detector and every detector's ID a row. A finding is
built with :func:`make`, which takes the row's name, kind, rule and fix, so a message and its
fix never drift apart (the emulated run's performance section builds its findings the same
way).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from migrate.core.registry import Registry
from migrate.perf.model import Finding

__all__ = ["DETECTORS", "Entry", "catalog", "detector", "limit", "make"]

CATALOG_FILE = Path(__file__).with_name("data") / "findings.yaml"
KINDS = ("compute", "host", "communication", "cluster", "environment")
SOURCES = ("profile", "emulate")
SCOPES = ("rank", "cluster")
_ID = re.compile(r"PERF\d{3}")
_NAME = re.compile(r"[a-z][a-z0-9-]+")


@dataclass(frozen=True)
class Entry:
    id: str
    name: str
    kind: str
    sources: tuple[str, ...]
    title: str
    why: str
    fix: str
    rule: str | None
    limits: dict[str, float]  # the thresholds its detector applies, by name

    @property
    def placeholders(self) -> set[str]:
        return {f for _, f, _, _ in string.Formatter().parse(self.fix) if f}


class CatalogError(ValueError):
    """data/findings.yaml (or a detector) does not fit the schema: names the row."""


def _check_detector(name: str, member: Callable, meta: dict[str, Any]) -> None:
    if not _ID.fullmatch(name):
        raise ValueError("a detector is registered under a finding ID such as PERF101")
    if meta.get("scope", "rank") not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
    if not callable(member):
        raise TypeError("a detector is a function")


DETECTORS: Registry[Callable[..., Iterable[Finding]]] = Registry(
    "perf detector", "migrate.perf.detectors", check=_check_detector
)


def detector(finding_id: str, scope: str = "rank") -> Callable:
    """Register the decorated function as the detector of ``finding_id``."""
    return DETECTORS.register(finding_id, scope=scope)


def _entry(raw: Any, where: str) -> Entry:
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: a finding row is a mapping")
    known = {"id", "name", "kind", "sources", "title", "why", "fix", "rule", "limits"}
    if extra := set(raw) - known:
        raise CatalogError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
    for key in ("id", "name", "kind", "title", "why", "fix"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise CatalogError(f"{where}: {key!r} must be a non-empty string")
    where = f"{where} ({raw['id']})"
    if not _ID.fullmatch(raw["id"]) or not _NAME.fullmatch(raw["name"]):
        raise CatalogError(f"{where}: id is PERFnnn and name kebab-case")
    if raw["kind"] not in KINDS:
        raise CatalogError(f"{where}: kind must be one of {', '.join(KINDS)}")
    sources = raw.get("sources")
    if not isinstance(sources, list) or not sources or not set(sources) <= set(SOURCES):
        raise CatalogError(f"{where}: sources is a list of {', '.join(SOURCES)}")
    rule = raw.get("rule")
    if rule is not None and not isinstance(rule, str):
        raise CatalogError(f"{where}: rule is a rule code or null")
    limits = raw.get("limits") or {}
    if not isinstance(limits, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
        for k, v in limits.items()
    ):
        raise CatalogError(f"{where}: limits maps names to numbers")
    return Entry(
        raw["id"],
        raw["name"],
        raw["kind"],
        tuple(sources),
        raw["title"],
        raw["why"],
        raw["fix"],
        rule,
        {k: float(v) for k, v in limits.items()},
    )


def load_catalog(path: Path = CATALOG_FILE, rule_codes: set[str] | None = None) -> dict[str, Entry]:
    """The rows of ``path`` by ID, every cross-reference checked (see the module doc)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    rows = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise CatalogError(f"{path.name}: a mapping with a 'findings' list")
    entries: dict[str, Entry] = {}
    names: set[str] = set()
    for i, raw in enumerate(rows):
        entry = _entry(raw, f"{path.name} row {i + 1}")
        if entry.id in entries or entry.name in names:
            raise CatalogError(f"{path.name}: {entry.id} ({entry.name}) is listed twice")
        entries[entry.id] = entry
        names.add(entry.name)
    _check_references(path.name, entries, _rule_codes() if rule_codes is None else rule_codes)
    return entries


def _rule_codes() -> set[str]:
    from migrate.core.rules import default_rules

    return {r.code for r in default_rules()}


def _check_references(where: str, entries: dict[str, Entry], rule_codes: set[str]) -> None:
    for entry in entries.values():
        if entry.rule is not None and entry.rule not in rule_codes:
            raise CatalogError(f"{where}: {entry.id} names rule {entry.rule}, which is not in the rule table")
        if "profile" in entry.sources and entry.id not in DETECTORS:
            raise CatalogError(f"{where}: {entry.id} comes from profiles but no detector registers it")
    for finding_id in DETECTORS:
        if finding_id not in entries:
            raise CatalogError(f"detector {finding_id} has no row in {where}")


@cache
def catalog() -> dict[str, Entry]:
    return load_catalog()


def limit(finding_id: str, name: str) -> float:
    """Threshold ``name`` of row ``finding_id``; CatalogError when the row lacks it."""
    entry = catalog()[finding_id]
    if name not in entry.limits:
        raise CatalogError(f"{CATALOG_FILE.name}: {finding_id} has no limit {name!r}")
    return entry.limits[name]


class _Keep(dict):
    """Format values: a placeholder the detector did not fill stays as it is written."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def make(
    finding_id: str,
    message: str,
    evidence: dict[str, Any],
    saving_us: float | None,
    *,
    locations: Iterable[str] = (),
    rank: int | None = None,
    rule: str | None = None,
    share: float | None = None,
    **fix_values: Any,
) -> Finding:
    """A Finding of catalog row ``finding_id``; ``fix_values`` fill its fix's placeholders,
    ``rule`` overrides the row's rule (a row covering several rules)."""
    entry = catalog()[finding_id]
    if rule is not None and rule not in _rule_codes():
        raise CatalogError(f"{finding_id}: rule {rule} is not in the rule table")
    return Finding(
        id=entry.id,
        name=entry.name,
        kind=entry.kind,
        message=message,
        evidence=evidence,
        fix=" ".join(
            string.Formatter()
            .vformat(entry.fix, (), _Keep({"rule": rule or entry.rule, **fix_values}))
            .split()
        ),
        saving_us=None if saving_us is None else round(float(saving_us), 3),
        locations=list(dict.fromkeys(locations))[:10],
        rank=rank,
        rule=rule or entry.rule,
        share=None if share is None else round(float(share), 6),
    )
