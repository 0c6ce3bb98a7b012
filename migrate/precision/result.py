"""The result of a comparison or replay: truthy when the gate passes, carrying its evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from migrate.precision.judge import base_entry


@dataclass
class ComparisonResult:
    entries: list[dict[str, Any]]
    first_divergence: dict[str, Any] | None = None
    passed: bool = True
    violations: list[dict[str, Any]] = field(default_factory=list)
    allowed_violations: int = 0
    reference: str = ""
    target: str = ""
    culprit: dict[str, Any] | None = None
    replay: bool = False
    weights: list[dict[str, Any]] = field(default_factory=list)  # weights that differ
    precision: dict[str, Any] = field(default_factory=dict)  # run classes, profile
    ranks: list[dict[str, Any]] = field(default_factory=list)  # per-rank summaries
    inconclusive: str | None = None  # replay: why no culprit can be named
    replay_stats: dict[str, Any] = field(default_factory=dict)
    fail_on_missing: bool = True
    replay_command: str | None = None  # compare: the replay that follows its first divergence

    def __bool__(self) -> bool:
        return self.passed

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "warn": 0, "fail": 0, "missing": 0}
        for e in self.entries:
            out[e["status"]] = out.get(e["status"], 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        doc = {
            "reference": self.reference,
            "target": self.target,
            "entries": self.entries,
            "first_divergence": self.first_divergence,
            "gate": {
                "passed": self.passed,
                "violations": self.violations,
                "allowed_violations": self.allowed_violations,
            },
            "summary": self.counts(),
            "weights": self.weights,
            "precision": self.precision,
        }
        if self.ranks:
            doc["ranks"] = self.ranks
        if self.replay:
            doc["culprit"] = self.culprit
            doc["inconclusive"] = self.inconclusive
            doc["replay"] = self.replay_stats
        return doc


VIOLATION_KEYS = ("name", "call", "kind", "index", "status", "reason")


def evaluate_gate(
    entries: list[dict], gate: Any, weights: list[dict] | None = None
) -> tuple[bool, list[dict]]:
    bad = {"fail", "missing"} if gate.fail_on_missing else {"fail"}
    violations = [{k: e[k] for k in VIOLATION_KEYS} for e in entries if e["status"] in bad]
    violations += [
        {"name": w["name"], "call": 0, "kind": "weight", "index": 0, "status": "fail", "reason": w["reason"]}
        for w in weights or []
    ]
    return len(violations) <= gate.allowed_violations, violations


def missing_entry(rec: dict, side: str) -> dict[str, Any]:
    entry = base_entry(rec, None)
    entry.update(status="missing", missing_in=side, reason=f"absent from the {side} dump")
    return entry
