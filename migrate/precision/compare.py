"""Compare two dumps: align, stream tensor pairs, judge each, localize, apply the gate."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.core.errors import UsageError
from migrate.precision.align import align, load_mapping
from migrate.precision.judge import base_entry, compare_records
from migrate.precision.localize import first_divergence
from migrate.precision.manifest import Dump
from migrate.precision.threads import one_intra_op_thread
from migrate.precision.thresholds import Gate, load_gate


class IncompatibleDumps(UsageError):
    """The two dumps share no comparable record (exit 2)."""


@dataclass
class ComparisonResult:
    """Truthy when the gate passes; carries every entry as evidence."""

    entries: list[dict[str, Any]]
    first_divergence: dict[str, Any] | None = None
    passed: bool = True
    violations: list[dict[str, Any]] = field(default_factory=list)
    allowed_violations: int = 0
    reference: str = ""
    target: str = ""
    culprit: dict[str, Any] | None = None
    replay: bool = False

    def __bool__(self) -> bool:
        return self.passed

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "warn": 0, "fail": 0, "missing": 0}
        for e in self.entries:
            out[e["status"]] = out.get(e["status"], 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        doc = {"reference": self.reference, "target": self.target, "entries": self.entries,
               "first_divergence": self.first_divergence,
               "gate": {"passed": self.passed, "violations": self.violations,
                        "allowed_violations": self.allowed_violations},
               "summary": self.counts()}
        if self.replay:
            doc["culprit"] = self.culprit
        return doc


def evaluate_gate(entries: list[dict], gate: Gate) -> tuple[bool, list[dict]]:
    bad = {"fail", "missing"} if gate.fail_on_missing else {"fail"}
    violations = [{k: e[k] for k in ("name", "call", "kind", "index", "status", "reason")}
                  for e in entries if e["status"] in bad]
    return len(violations) <= gate.allowed_violations, violations


def missing_entry(rec: dict, side: str) -> dict[str, Any]:
    entry = base_entry(rec, None)
    entry.update(status="missing", missing_in=side, reason=f"absent from the {side} dump")
    return entry


def compare_dumps(ref_dir: str | Path, tgt_dir: str | Path, gate: Gate | str | Path | None = None,
                  mapping: str | Path | None = None) -> ComparisonResult:
    gate = gate if isinstance(gate, Gate) else load_gate(gate)
    with one_intra_op_thread():
        return _compare(ref_dir, tgt_dir, gate, mapping)


def _compare(ref_dir: str | Path, tgt_dir: str | Path, gate: Gate,
             mapping: str | Path | None) -> ComparisonResult:
    ref, tgt = Dump(ref_dir), Dump(tgt_dir)
    kinds = {r["kind"] for r in ref.records} & {r["kind"] for r in tgt.records}
    pairs, extra = align([r for r in ref.records if r["kind"] in kinds],
                         [r for r in tgt.records if r["kind"] in kinds], load_mapping(mapping))
    if not any(other is not None for _, other in pairs):
        raise IncompatibleDumps(f"{ref_dir} and {tgt_dir} share no record "
                                "(different models? pass --mapping for renamed modules)")
    entries, cache = [], {}
    for rec, other in pairs:
        if other is None:
            entries.append(missing_entry(rec, "target"))
            continue
        th = gate.for_entry(rec["name"], rec["dtype"], other["dtype"])
        ck = (rec.get("file"), rec.get("tensor"), other.get("file"), other.get("tensor"),
              tuple(sorted((k, str(v)) for k, v in th.items())))
        if ck[1] is not None and ck[3] is not None and ck in cache:
            entry = {**cache[ck], **{k: rec[k] for k in ("name", "call", "kind", "index")}}
        else:
            entry = compare_records(rec, other, ref.tensor(rec), tgt.tensor(other), th,
                                    gate.rel_floor)
            cache[ck] = entry
        entries.append(entry)
    entries.extend(missing_entry(r, "reference") for r in extra)
    ref.close()
    tgt.close()
    passed, violations = evaluate_gate(entries, gate)
    return ComparisonResult(entries=entries,
                            first_divergence=first_divergence(entries), passed=passed,
                            violations=violations, allowed_violations=gate.allowed_violations,
                            reference=str(ref_dir), target=str(tgt_dir))
