"""Findings across ranks: the slow rank (PERF304) and the slow link (PERF305).

In a synchronous job the ranks wait for each other in collectives, so a slow rank shows as
the one with the most work of its own (computing + free) and the least exposed
communication, while the others wait. It is named when its work exceeds the median of the
other ranks' by more than ``min_step_share`` of the mean step time; its bottleneck is the
part (computing or free, i.e. the device or the host) that holds most of the excess.

msprof-analyze 26.2 (advisor SlowRankAnalyzer) judges each of computing, communication and
free apart: a dimension "has issues" when its max - min across ranks exceeds 5% of the mean
step time (RATIO_THRESHOLD), and the rank with the most free (or computing) time is the one it
goes on to analyse. Same threshold, two differences on purpose: the slow rank is measured
against the median of the others, not the fastest one (one fast rank, or one idle rank
waiting at a barrier, makes max - min large on a healthy job), and a long communication time
is not called a problem of that rank (it is where the others wait for the slow one). On the
8-rank cluster output of ../shared/data both name rank 1, its free time.

A slow link is a (rank, link type) whose bandwidth in a group is below ``max_ratio`` of the
median of that link type across the group's ranks, or a rank-to-rank link of the cluster's
communication matrix below ``max_ratio`` of the median of its transport in the group. The
physical links (HCCS, PCIE, SIO, RDMA) are judged; SDMA, which CANN's writer makes their sum,
only for a rank that reports no HCCS, PCIE or SIO figures. msprof-analyze (SlowLinkAnalyzer)
prints every rank's SDMA and RDMA bandwidth summed over all groups and, when max - min
exceeds 5% of the mean, goes on with the slowest rank: ours compares like with like (one
group, one link type: a tensor-parallel group on HCCS and a data-parallel one on RDMA differ
by design) and needs a link 30% below its peers, as bandwidth varies with message size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from migrate.perf.analyze.cluster import ClusterView, median_of
from migrate.perf.catalog import detector, limit, make
from migrate.perf.detectors.common import pct, us
from migrate.perf.model import Finding, LinkPair, LinkRow

SDMA_PARTS = frozenset({"HCCS", "PCIE", "SIO"})  # CANN's writer sums these into SDMA


@detector("PERF304", scope="cluster")
def slow_rank(view: ClusterView) -> list[Finding]:
    loads = view.loads()
    if len(loads) < 2:
        return []
    slow = max(loads, key=lambda r: r.work)
    others = [r for r in loads if r.rank != slow.rank]
    base = median_of([r.work for r in others])
    step = sum(r.work + r.exposed for r in loads) / len(loads)
    if base <= 0 or step <= 0:
        return []
    excess = (slow.work - base) / base
    share = (slow.work - base) / step
    if share <= limit("PERF304", "min_step_share"):
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
                "step_share": round(share, 6),
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
            share=share,
            slow_rank=slow.rank,
            bottleneck=bottleneck,
        )
    ]


def _judged(rows: list[LinkRow]) -> list[LinkRow]:
    """The physical links; a rank's SDMA sum only where it reports none of its parts."""
    parts = {(r.group, r.rank) for r in rows if r.link in SDMA_PARTS}
    return [r for r in rows if r.link != "SDMA" or (r.group, r.rank) not in parts]


Link = LinkRow | LinkPair


def _below_median(items: Sequence[Link], kind: Callable[[Link], str]) -> list[tuple[Link, float]]:
    """(link, the median bandwidth of its kind in its group) for each link below
    ``max_ratio`` of that median (kinds with one link are not judged)."""
    by_kind: dict[tuple[str, str], list[Link]] = defaultdict(list)
    for item in items:
        by_kind[(item.group, kind(item))].append(item)
    out: list[tuple[Link, float]] = []
    for _, found in sorted(by_kind.items()):
        base = median_of([x.bandwidth_gbs for x in found]) if len(found) >= 2 else 0.0
        out.extend(
            (x, base) for x in found if base > 0 and x.bandwidth_gbs < limit("PERF305", "max_ratio") * base
        )
    return out


def _slow_link(item: Link, base: float) -> Finding:
    figures = {"bandwidth_gbs": round(item.bandwidth_gbs, 4), "median_gbs": round(base, 4)}
    share = pct(item.bandwidth_gbs / base)
    reached = f"reached {item.bandwidth_gbs:.3g} GB/s, {share} of the group's median {base:.3g} GB/s"
    if isinstance(item, LinkRow):
        where, rank = f"rank {item.rank}'s {item.link} link in group {item.group}", item.rank
        evidence = {"group": item.group, "link": item.link, "rank": item.rank, **figures}
        link = f"rank {item.rank} and its peers over {item.link}"
    else:
        where, rank = (
            f"the {item.transport} link from rank {item.src} to rank {item.dst} in group {item.group}",
            item.src,
        )
        evidence = {"group": item.group, "link": item.transport, "src": item.src, "dst": item.dst, **figures}
        link = f"rank {item.src} and rank {item.dst} ({item.transport})"
    return make("PERF305", f"{where} {reached}", evidence, None, rank=rank, link=link)


@detector("PERF305", scope="cluster")
def slow_link(view: ClusterView) -> list[Finding]:
    slow = _below_median(_judged(view.links()), lambda x: x.link if isinstance(x, LinkRow) else "")
    slow += _below_median(view.pairs(), lambda x: x.transport if isinstance(x, LinkPair) else "")
    return [_slow_link(item, base) for item, base in slow]
