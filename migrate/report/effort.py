"""A rough effort estimate: minutes per finding, by category, overridable per rule.

The per-category figures are our own planning assumptions, not measurements. They follow
the model of SonarQube's "remediation effort" (a constant number of minutes per issue of a
rule, summed into technical debt): enough to size a port, not to bill it.

* auto (1 min): run `migrate apply` and glance at the diff.
* assisted (10 min): the fix may change behaviour (device strings built at run time,
  backend names compared in logic); read the surrounding code and test it.
* manual (60 min): a person writes the NPU path (custom CUDA kernels, CUDA-only
  libraries, APIs with no NPU counterpart); often more, rarely less.

A rule overrides its figure with ``params: {effort_minutes: N}`` in its YAML row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from migrate.core.findings import CATEGORIES, Finding
from migrate.core.rules import Rule

CATEGORY_MINUTES: dict[str, float] = {"auto": 1.0, "assisted": 10.0, "manual": 60.0}


@dataclass
class Effort:
    minutes: float = 0.0
    by_category: dict[str, float] = field(default_factory=lambda: {c: 0.0 for c in CATEGORIES})

    def describe(self) -> str:
        return format_minutes(self.minutes)


def finding_minutes(finding: Finding, rules: Mapping[str, Rule]) -> float:
    rule = rules.get(finding.rule)
    override = rule.params.get("effort_minutes") if rule is not None else None
    if isinstance(override, (int, float)) and not isinstance(override, bool) and override >= 0:
        return float(override)
    return CATEGORY_MINUTES.get(finding.category, CATEGORY_MINUTES["manual"])


def estimate(findings: Iterable[Finding], rules: Mapping[str, Rule]) -> Effort:
    effort = Effort()
    for f in findings:
        m = finding_minutes(f, rules)
        effort.minutes += m
        effort.by_category[f.category] = effort.by_category.get(f.category, 0.0) + m
    return effort


def format_minutes(minutes: float) -> str:
    """'0 min', '45 min', '2.5 h', '3.1 d' (8-hour days)."""
    if minutes < 60:
        return f"{minutes:.0f} min"
    hours = minutes / 60
    if hours < 8 * 5:
        return f"{hours:.1f} h"
    return f"{hours / 8:.1f} d (8 h days)"
