"""Findings across ranks: the slow rank (PERF304) and the slow link (PERF305).

In a synchronous job the ranks wait for each other in collectives, so a slow rank shows as
the one with the most work of its own (computing + free) and the least exposed
communication, while the others wait. It is named when its work exceeds the median of the
other ranks' by ``min_excess``; its bottleneck is the part (computing or free, i.e. the
device or the host) that holds most of the excess.

A slow link is a (rank, link type) whose bandwidth in cluster_communication.json is below
``max_ratio`` of the median bandwidth of that link type across the group's ranks.
"""

from __future__ import annotations

from collections import defaultdict

from migrate.perf.analyze.cluster import ClusterView, median_of
from migrate.perf.catalog import detector, limit, make
from migrate.perf.detectors.common import pct, us
from migrate.perf.model import Finding


@detector("PERF304", scope="cluster")
def slow_rank(view: ClusterView) -> list[Finding]:
    loads = view.loads()
    if len(loads) < 2:
        return []
    slow = max(loads, key=lambda r: r.work)
    others = [r for r in loads if r.rank != slow.rank]
    base = median_of([r.work for r in others])
    if base <= 0:
        return []
    excess = (slow.work - base) / base
    if excess < limit("PERF304", "min_excess"):
        return []
    d_comp = slow.computing - median_of([r.computing for r in others])
    d_free = slow.free - median_of([r.free for r in others])
    if d_free >= d_comp:
        bottleneck = (
            f"its host (free time {us(slow.free)} per step, the others' median {us(slow.free - d_free)})"
        )
        part = "free"
    else:
        median = us(slow.computing - d_comp)
        bottleneck = f"its device (computing {us(slow.computing)} per step, the others' median {median})"
        part = "computing"
    waited = median_of([r.exposed for r in others]) - slow.exposed
    return [
        make(
            "PERF304",
            f"rank {slow.rank} is the slow rank of {len(loads)}: its own work per step is {pct(excess)} "
            "above "
            f"the others' median, in its {part} time; the other ranks wait {us(max(waited, 0.0))} more "
            "per step in communication",
            {
                "slow_rank": slow.rank,
                "bottleneck": part,
                "excess": round(excess, 6),
                "ranks": [
                    {
                        "rank": r.rank,
                        "computing_us": round(r.computing, 3),
                        "free_us": round(r.free, 3),
                        "exposed_communication_us": round(r.exposed, 3),
                    }
                    for r in loads
                ],
                "source": slow.source,
            },
            max(slow.work - base, 0.0),
            rank=slow.rank,
            share=excess,
            slow_rank=slow.rank,
            bottleneck=bottleneck,
        )
    ]


@detector("PERF305", scope="cluster")
def slow_link(view: ClusterView) -> list[Finding]:
    by_type: dict[tuple[str, str], list] = defaultdict(list)
    for row in view.links():
        by_type[(row.group, row.link)].append(row)
    out = []
    for (group, link), rows in sorted(by_type.items()):
        if len(rows) < 2:
            continue
        base = median_of([r.bandwidth_gbs for r in rows])
        for r in rows:
            if base > 0 and r.bandwidth_gbs < limit("PERF305", "max_ratio") * base:
                out.append(
                    make(
                        "PERF305",
                        f"rank {r.rank}'s {link} link in group {group} reached {r.bandwidth_gbs:.3g} GB/s, "
                        f"{pct(r.bandwidth_gbs / base)} of the group's median {base:.3g} GB/s",
                        {
                            "group": group,
                            "link": link,
                            "rank": r.rank,
                            "bandwidth_gbs": round(r.bandwidth_gbs, 4),
                            "median_gbs": round(base, 4),
                        },
                        None,
                        rank=r.rank,
                        link=f"rank {r.rank} and its peers over {link}",
                    )
                )
    return out
