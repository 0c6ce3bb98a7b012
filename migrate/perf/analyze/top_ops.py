"""Top operators of one rank: device time of the ops in the profiled steps, grouped by op
type and accelerator core, the most costly first. ``name`` is the group's costliest task
name (``aclnnMm_MatMulCommon_MatMulV2`` for MatMulV2). Without a kernel list, Ascend's
op_statistic.csv stands in."""

from __future__ import annotations

from collections import defaultdict

from migrate.perf.analyze.context import RankContext
from migrate.perf.model import OpRow

__all__ = ["device_time", "top_ops"]


def device_time(ctx: RankContext) -> float:
    cols = ctx.tl.device_ops.cols
    return sum(cols["dur"][i] for i in ctx.ops_in_steps())


def top_ops(ctx: RankContext, rank: int | None, limit: int = 20) -> list[OpRow]:
    cols, strings = ctx.tl.device_ops.cols, ctx.tl.strings
    groups: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0, 0.0])
    by_name: dict[tuple[int, int], dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for i in ctx.ops_in_steps():
        key = (cols["type"][i], cols["core"][i])
        g = groups[key]
        g[0] += 1
        g[1] += cols["dur"][i]
        by_name[key][cols["name"][i]] += cols["dur"][i]
    if not groups and ctx.tl.tables.get("op_statistic"):
        return _from_statistic(ctx, rank, limit)
    total = sum(g[1] for g in groups.values()) or 1.0
    rows = sorted(groups.items(), key=lambda kv: -kv[1][1])[:limit]
    return [
        OpRow(
            rank=rank,
            name=strings[max(by_name[key].items(), key=lambda kv: kv[1])[0]],
            type=strings[key[0]],
            core=strings[key[1]],
            count=int(g[0]),
            total_us=round(g[1], 3),
            share=round(g[1] / total, 6),
        )
        for key, g in rows
    ]


def _from_statistic(ctx: RankContext, rank: int | None, limit: int) -> list[OpRow]:
    stats = ctx.tl.tables["op_statistic"]
    total = sum(s[3] for s in stats) or 1.0
    return [
        OpRow(rank, kind, kind, core, count, round(us, 3), round(us / total, 6))
        for kind, core, count, us in sorted(stats, key=lambda s: -s[3])[:limit]
    ]
