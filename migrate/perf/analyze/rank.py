"""One rank: Timeline -> RankResult (steps, top operators, every rank detector's findings,
device time per framework op and per collective for the side-by-side compare).

This runs in the worker process that read the rank, so only the small result crosses
back. A detector that fails is a bug in the tool, not in the profile: it propagates.
"""

from __future__ import annotations

from collections import defaultdict

from migrate.perf.analyze.context import RankContext
from migrate.perf.analyze.steps import breakdown
from migrate.perf.analyze.top_ops import device_time, top_ops
from migrate.perf.catalog import DETECTORS
from migrate.perf.model import Finding, LinkRow, ProfileInfo, RankResult, StepBreakdown
from migrate.perf.timeline import COMM_CORES, Timeline

__all__ = ["analyze_rank", "profile_info"]


def profile_info(tl: Timeline) -> ProfileInfo:
    return ProfileInfo(tl.path, tl.kind, tl.device, [tl.rank], tl.chip, list(tl.files))


def _framework_ops(ctx: RankContext) -> dict[str, list[float]]:
    """framework op (the launching aten op, else the kernel's type) -> [count, device us]."""
    tl = ctx.tl
    cols, strings = tl.device_ops.cols, tl.strings
    launcher = ctx.launcher
    host = tl.host_ops.cols
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for i in ctx.ops_in_steps():
        h = launcher.get(i)
        name = strings[host["name"][h]] if h is not None else strings[cols["type"][i]]
        row = out[name]
        row[0] += 1
        row[1] += cols["dur"][i]
    return {k: [int(v[0]), round(v[1], 3)] for k, v in out.items()}


def _collectives(ctx: RankContext) -> dict[str, list[float]]:
    cols, strings = ctx.tl.device_ops.cols, ctx.tl.strings
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for i in ctx.ops_in_steps():
        if strings[cols["core"][i]] in COMM_CORES:
            row = out[strings[cols["type"][i]]]
            row[0] += 1
            row[1] += cols["dur"][i]
            row[2] += cols["bytes"][i]
    return {k: [int(v[0]), round(v[1], 3), v[2]] for k, v in out.items()}


def _links(tl: Timeline) -> list[LinkRow]:
    """Bytes and time per (group, link type) of the rank's collectives (tables["communication"])."""
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for op in (tl.tables.get("communication") or {}).get("ops", []):
        for link, figures in op.get("links", {}).items():
            got = sums[(op.get("group", ""), link)]
            got[0] += figures.get("bytes", 0.0)
            got[1] += figures.get("ms", 0.0)
    rank = tl.rank if tl.rank is not None else -1
    return [LinkRow(g, rank, link, b, ms) for (g, link), (b, ms) in sorted(sums.items()) if b > 0]


class Analysis:
    """What the rank detectors are given: the context and the figures already computed."""

    def __init__(self, ctx: RankContext, steps: list[StepBreakdown], rank: int | None) -> None:
        self.ctx, self.steps, self.rank = ctx, steps, rank
        self.tl = ctx.tl

    @property
    def mean_step_us(self) -> float:
        totals = [s.total_us for s in self.steps if s.total_us > 0]
        return sum(totals) / len(totals) if totals else 0.0

    @property
    def step_count(self) -> int:
        return max(1, len([s for s in self.steps if s.total_us > 0]) or self.ctx.step_count)


def analyze_rank(tl: Timeline) -> RankResult:
    ctx = RankContext(tl)
    rank = tl.rank
    steps = breakdown(ctx, rank)
    analysis = Analysis(ctx, steps, rank)
    findings: list[Finding] = []
    for finding_id, detect in DETECTORS.items():
        if DETECTORS.meta(finding_id).get("scope", "rank") == "rank":
            findings.extend(detect(analysis))
    if len(ctx.windows) == 1 and ctx.windows[0].id is None and len(tl.device_ops):
        tl.note("no ProfilerStep marks: the whole profile is taken as one step")
    return RankResult(
        profile=profile_info(tl),
        rank=rank,
        steps=steps,
        top_ops=top_ops(ctx, rank),
        findings=findings,
        notes=list(tl.notes),
        framework_ops=_framework_ops(ctx),
        collectives=_collectives(ctx),
        device_us=round(device_time(ctx), 3),
        links=_links(tl),
    )
