"""PERF104: framework op sequences that a torch_npu fused operator replaces.

The patterns are data (data/fusion_patterns.yaml), checked when they load: each rule a
code of the rule table, each fused operator a public torch_npu name of the wheel
(op_registry's modules.yaml). They are matched on the outermost aten ops of each thread
in time order; a match's saving is the device time of the tasks its ops launched (the
upper bound: the fused kernel is not free), else their host time.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from migrate.perf.analyze.rank import Analysis
from migrate.perf.catalog import CatalogError, detector, limit, make
from migrate.perf.detectors.common import host_locations, us
from migrate.perf.model import Finding
from migrate.perf.timeline import HostOp

PATTERNS_FILE = Path(__file__).resolve().parent.parent / "data" / "fusion_patterns.yaml"


@dataclass(frozen=True)
class Pattern:
    name: str
    rule: str
    fused: str
    ops: tuple[str, ...]
    span: int


def _torch_npu_names() -> set[str]:
    from migrate.core.resources import op_registry_dir

    found: set[str] = set()
    for path in sorted((op_registry_dir() / "aten").glob("torch_npu-*/modules.yaml")):
        mods = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("modules") or {}
        for module, names in mods.items():
            found.update(f"{module}.{n}" for n in names or [])
    return found


@cache
def patterns() -> tuple[Pattern, ...]:
    from migrate.core.rules import default_rules

    raw = (yaml.safe_load(PATTERNS_FILE.read_text(encoding="utf-8")) or {}).get("patterns")
    if not isinstance(raw, list):
        raise CatalogError(f"{PATTERNS_FILE.name}: a mapping with a 'patterns' list")
    codes = {r.code for r in default_rules()}
    names = _torch_npu_names()
    out = []
    for row in raw:
        try:
            p = Pattern(row["name"], row["rule"], row["fused"], tuple(row["ops"]), int(row["span"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise CatalogError(f"{PATTERNS_FILE.name}: bad pattern row {row!r}: {exc}") from None
        if p.rule not in codes:
            raise CatalogError(f"{PATTERNS_FILE.name}: {p.name} names rule {p.rule}, not in the rule table")
        if p.fused not in names:
            raise CatalogError(
                f"{PATTERNS_FILE.name}: {p.name} names {p.fused}, not a torch_npu name of the wheel"
            )
        if len(p.ops) < 2 or p.span < len(p.ops):
            raise CatalogError(
                f"{PATTERNS_FILE.name}: {p.name} needs 2+ ops within a span at least that long"
            )
        out.append(p)
    return tuple(out)


def _sequences(a: Analysis) -> dict[int, list[HostOp]]:
    """thread -> its outermost aten ops in the steps, in time order."""
    by_tid: dict[int, list[HostOp]] = defaultdict(list)
    for w in a.ctx.windows:
        for op in a.ctx.host_ops_in(w, match=lambda name: name.startswith("aten::")):
            by_tid[op.tid].append(op)
    out = {}
    for tid, ops in by_tid.items():
        ops.sort(key=lambda o: (o.start, -o.dur))
        outer: list[HostOp] = []
        for op in ops:
            if outer and op.end <= outer[-1].end:
                continue
            outer.append(op)
        out[tid] = outer
    return out


def _matches(seq: list[HostOp], p: Pattern) -> list[list[HostOp]]:
    found, i = [], 0
    while i < len(seq):
        if seq[i].name != p.ops[0]:
            i += 1
            continue
        picked, j = [seq[i]], i + 1
        while j < len(seq) and j < i + p.span and len(picked) < len(p.ops):
            if seq[j].name == p.ops[len(picked)]:
                picked.append(seq[j])
            j += 1
        if len(picked) == len(p.ops):
            found.append(picked)
            i = seq.index(picked[-1], i) + 1
        else:
            i += 1
    return found


def _device_us(a: Analysis, ops: list[HostOp]) -> float:
    """Device time of the tasks launched inside ``ops`` (0 without launch links)."""
    launcher = a.ctx.launcher
    if not launcher:
        return 0.0
    spans = [(op.tid, op.start, op.end) for op in ops]
    cols, launches = a.tl.device_ops.cols, a.tl.launches
    total = 0.0
    for d in launcher:
        launch = launches.get(cols["launch"][d])
        if launch and any(t == launch[0] and s <= launch[1] <= e for t, s, e in spans):
            total += cols["dur"][d]
    return total


@detector("PERF104")
def fusible_operators(a: Analysis) -> list[Finding]:
    if a.tl.device != "npu":
        return []
    sequences = _sequences(a)
    steps = max(1, len(a.ctx.windows))
    out = []
    for p in patterns():
        matches = [m for seq in sequences.values() for m in _matches(seq, p)]
        if len(matches) / steps < limit("PERF104", "min_matches"):
            continue
        ops = [op for m in matches for op in m]
        device = _device_us(a, ops) / steps
        saving = device or sum(op.dur for op in ops) / steps
        rule_name = p.name
        out.append(
            make(
                "PERF104",
                f"{len(matches) / steps:.3g} {p.name} sequence(s) per step ({' -> '.join(p.ops)}), "
                f"{us(saving)} per step {'on the device' if device else 'on the host'}",
                {"pattern": p.name, "per_step": round(len(matches) / steps, 3), "ops": list(p.ops)},
                saving,
                locations=host_locations(a, (m[0] for m in matches)),
                rank=a.rank,
                rule=p.rule,
                fused=p.fused,
                rule_name=rule_name,
            )
        )
    return out
