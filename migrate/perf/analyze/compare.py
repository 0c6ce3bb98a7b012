"""The run beside its reference (``--ref``, the CUDA run): both step breakdowns, MFU on both
sides, operators matched by framework op (the aten op that launched the kernels, through the
profiles' op-to-kernel correlation) ranked by the device time lost per step, and
communication by collective.

Every figure is per step and per rank: a side's totals over its profiled steps, divided by
its step count, averaged over its ranks, so runs of different lengths or sizes compare.
``step_ratio`` is the run's mean step over the reference's (1.25: 25 % slower), the figure
``--fail-on regression=`` judges.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from migrate.perf.analyze.op_aliases import fold
from migrate.perf.model import RankResult

__all__ = ["compare_sides", "per_step"]

MAX_OPS = 50  # operator rows kept, the most time lost first


def _steps(r: RankResult) -> int:
    return max(1, len([s for s in r.steps if s.total_us > 0]))


def per_step(ranks: list[RankResult], attr: str) -> dict[str, list[float]]:
    """``framework_ops`` (names folded by data/op_aliases.yaml) or ``collectives`` of every
    rank, per step and averaged over ranks."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for r in ranks:
        n = _steps(r)
        for name, row in getattr(r, attr).items():
            got = sums[fold(name) if attr == "framework_ops" else name]
            for k, value in enumerate(row[:3]):
                got[k] += value / n / len(ranks)
    return dict(sums)


def _breakdown(ranks: list[RankResult]) -> dict[str, float] | None:
    """Each rank's mean step, by part, averaged over the ranks (MFU's step time too)."""
    keys = ("total_us", "computing_us", "communication_not_overlapped_us", "free_us")
    means = []
    for r in ranks:
        steps = [s for s in r.steps if s.total_us > 0]
        if steps:
            means.append({key: sum(getattr(s, key) for s in steps) / len(steps) for key in keys})
    if not means:
        return None
    return {key: round(sum(m[key] for m in means) / len(means), 3) for key in keys}


def _ops(ranks: list[RankResult], ref: list[RankResult]) -> list[dict[str, Any]]:
    mine, theirs = per_step(ranks, "framework_ops"), per_step(ref, "framework_ops")
    rows: list[dict[str, Any]] = []
    for op in set(mine) | set(theirs):
        a, b = mine.get(op, [0.0, 0.0]), theirs.get(op, [0.0, 0.0])
        rows.append(
            {
                "op": op,
                "count": round(a[0], 3),
                "us": round(a[1], 3),
                "ref_count": round(b[0], 3),
                "ref_us": round(b[1], 3),
                "lost_us": round(a[1] - b[1], 3),
            }
        )
    rows.sort(key=lambda r: (-r["lost_us"], r["op"]))
    return rows[:MAX_OPS]


def _collectives(ranks: list[RankResult], ref: list[RankResult]) -> list[dict[str, Any]]:
    mine, theirs = per_step(ranks, "collectives"), per_step(ref, "collectives")
    rows = []
    for name in sorted(set(mine) | set(theirs)):
        a, b = mine.get(name, [0.0] * 3), theirs.get(name, [0.0] * 3)
        rows.append(
            {
                "collective": name,
                "count": round(a[0], 3),
                "us": round(a[1], 3),
                "bytes": round(a[2]),
                "ref_count": round(b[0], 3),
                "ref_us": round(b[1], 3),
                "ref_bytes": round(b[2]),
            }
        )
    return rows


def _ms(value: float) -> str:
    return f"{value / 1e3:.3g} ms"


def _summary(mine: dict | None, theirs: dict | None, ratio: float | None, mfu, ref_mfu) -> list[str]:
    lines = []
    if mine and theirs:
        lines.append(
            f"step {_ms(mine['total_us'])} vs {_ms(theirs['total_us'])}"
            + (f" ({ratio:.3g}x the reference)" if ratio else "")
        )
        for key, label in (
            ("computing_us", "computing"),
            ("communication_not_overlapped_us", "communication not overlapped"),
            ("free_us", "free (host-bound)"),
        ):
            lines.append(f"{label} {_ms(mine[key])} vs {_ms(theirs[key])}")
    else:
        where = "either side" if not (mine or theirs) else "one side"
        lines.append(f"no step time on {where}: not compared")
    if mfu and ref_mfu:
        shown = [f"{100 * m['mfu']:.1f}%" if m.get("mfu") is not None else "-" for m in (mfu, ref_mfu)]
        lines.append(f"MFU {shown[0]} vs {shown[1]}")
    return lines


def _notes(side, ref) -> list[str]:
    notes = []
    for label, s in (("the run", side), ("the reference", ref)):
        if s.mixed:
            notes.append(f"{label}: {s.mixed}; its figures are averaged over profiles of several runs")
        if s.ranks and not any(r.framework_ops for r in s.ranks):
            notes.append(f"{label} has no device operators: operators are not compared")
    if side.ranks and ref.ranks and len(side.ranks) != len(ref.ranks):
        notes.append(
            f"the run has {len(side.ranks)} rank(s), the reference {len(ref.ranks)}: figures are per rank"
        )
    return notes


def compare_sides(side, ref, mfu: dict | None = None, ref_mfu: dict | None = None) -> dict[str, Any]:
    """The ``compare`` record of docs/contracts.md §10: ``side`` against ``ref`` (run.Side)."""
    mine, theirs = _breakdown(side.ranks), _breakdown(ref.ranks)
    ratio = mine["total_us"] / theirs["total_us"] if mine and theirs and theirs["total_us"] > 0 else None
    return {
        "ref_paths": [p.path for p in ref.profiles],
        "step_ratio": round(ratio, 6) if ratio is not None else None,
        "breakdown": mine,
        "ref_breakdown": theirs,
        "mfu": mfu,
        "ref_mfu": ref_mfu,
        "summary": _summary(mine, theirs, ratio, mfu, ref_mfu),
        "ops": _ops(side.ranks, ref.ranks),
        "collectives": _collectives(side.ranks, ref.ranks),
        "notes": _notes(side, ref),
    }
