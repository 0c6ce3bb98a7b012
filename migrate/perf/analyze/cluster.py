"""What the cluster detectors see: every rank's steps (from the ranks' own profiles, else
from msprof-analyze's cluster_step_trace_time.csv or cluster_analysis.db), the per-link
communication figures (cluster_communication.json or cluster_analysis.db, else the ranks' own
communication.json / .db) and the rank-to-rank links of cluster_communication_matrix.json."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from statistics import median

from migrate.perf.model import LinkPair, LinkRow, RankResult, StepBreakdown
from migrate.perf.read.cluster import ClusterData

__all__ = ["ClusterView", "RankLoad"]


@dataclass
class RankLoad:
    """A rank's mean step: its own work (computing + free: time it did not wait in a
    collective) and its exposed communication."""

    rank: int
    computing: float
    free: float
    exposed: float
    source: str

    @property
    def work(self) -> float:
        return self.computing + self.free


@dataclass
class ClusterView:
    ranks: list[RankResult]
    clusters: list[ClusterData] = field(default_factory=list)

    def steps_by_rank(self) -> dict[int, list[StepBreakdown]]:
        own = {r.rank: r.steps for r in self.ranks if r.rank is not None and r.steps}
        if len(own) >= 2:
            return own
        merged: dict[int, list[StepBreakdown]] = {}
        for c in self.clusters:
            merged.update(c.steps)
        return merged or own

    def loads(self) -> list[RankLoad]:
        out = []
        for rank, steps in sorted(self.steps_by_rank().items()):
            steps = [s for s in steps if s.total_us > 0]
            if not steps:
                continue
            n = len(steps)
            out.append(
                RankLoad(
                    rank,
                    sum(s.computing_us for s in steps) / n,
                    sum(s.free_us for s in steps) / n,
                    sum(s.communication_not_overlapped_us for s in steps) / n,
                    steps[0].source,
                )
            )
        return out

    def links(self) -> list[LinkRow]:
        """The cluster output's link rows, else (two ranks or more) the ranks' own."""
        rows = [row for c in self.clusters for row in c.links]
        if rows:
            return rows
        ranked = [r for r in self.ranks if r.rank is not None and r.links]
        if len(ranked) < 2:
            return []
        return [replace(row, rank=r.rank or 0) for r in ranked for row in r.links]

    def pairs(self) -> list[LinkPair]:
        return [pair for c in self.clusters for pair in c.pairs]


def median_of(values: list[float]) -> float:
    return median(values) if values else 0.0
