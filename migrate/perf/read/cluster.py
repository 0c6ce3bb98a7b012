"""msprof-analyze cluster output (``cluster_analysis_output/``) -> per-rank step rows and
per-link communication figures.

* ``cluster_step_trace_time.csv``: one row per rank (``Type`` rank, ``Index`` the rank id)
  and stage rows (skipped), with the columns of step_trace_time.csv; the ``Step`` column is
  empty when the job's steps were merged.
* ``cluster_communication.json``: ``{group: {step: {collective: {rank: {"Communication
  Time Info": {...}, "Communication Bandwidth Info": {link type: {"Transit Size(MB)",
  "Transit Time(ms)", "Bandwidth(GB/s)", "Size Distribution": {size MB: [count, ms]}}}}}}}}``.
  Each (rank, link type) becomes a row: bytes, milliseconds and the bandwidth they give,
  summed over the group's collectives. A rank key "total" (msprof-analyze's own sum) is
  skipped.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.perf.model import StepBreakdown
from migrate.perf.read.ascend_tables import rows
from migrate.perf.read.chrome import integer, number
from migrate.perf.read.discover import Source
from migrate.perf.read.jsonstream import TraceError, open_bounded

__all__ = ["ClusterData", "read_cluster"]

MB = 1024 * 1024  # msprof-analyze's "MB" is 2**20 bytes (its SDMA/RDMA sizes are multiples of 512 in it)
MAX_JSON = 1 << 30


@dataclass
class LinkRow:
    group: str
    rank: int
    link: str  # RDMA, HCCS, PCIE, SDMA, SIO ...
    bytes: float
    ms: float

    @property
    def bandwidth_gbs(self) -> float:
        return self.bytes / 1e9 / (self.ms / 1e3) if self.ms > 0 else 0.0


@dataclass
class ClusterData:
    path: str
    steps: dict[int, list[StepBreakdown]] = field(default_factory=dict)
    links: list[LinkRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _steps(path: Path, data: ClusterData) -> None:
    for row in rows(path):
        if row.get("Type", "").strip() != "rank":
            continue
        rank = integer(row.get("Index", "").strip())
        computing = number(row.get("Computing", ""))
        free = number(row.get("Free", ""))
        if rank is None or computing is None or free is None:
            continue
        exposed = number(row.get("Communication(Not Overlapped)", "")) or 0.0
        comm = number(row.get("Communication", "")) or 0.0
        total = computing + exposed + free
        data.steps.setdefault(rank, []).append(
            StepBreakdown(
                rank,
                integer(row.get("Step", "").strip()),
                round(total, 3),
                computing,
                exposed,
                free,
                comm,
                "cluster",
            )
        )


def _load(path: Path) -> Any:
    raw, stream = open_bounded(path, MAX_JSON)
    try:
        return json.loads(stream.read(MAX_JSON + 1).decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise TraceError(f"not JSON: {str(exc).splitlines()[0][:120]}") from None
    finally:
        raw.close()


def _links(path: Path, data: ClusterData) -> None:
    doc = _load(path)
    if not isinstance(doc, dict):
        raise TraceError("not a mapping of communication groups")
    sums: dict[tuple[str, int, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for group, steps in doc.items():
        for ops in (steps or {}).values() if isinstance(steps, dict) else ():
            for per_rank in (ops or {}).values() if isinstance(ops, dict) else ():
                for rank_key, info in (per_rank or {}).items() if isinstance(per_rank, dict) else ():
                    rank = integer(rank_key)
                    bw = info.get("Communication Bandwidth Info") if isinstance(info, dict) else None
                    if rank is None or not isinstance(bw, dict):
                        continue
                    for link, figures in bw.items():
                        if not isinstance(figures, dict):
                            continue
                        size = number(figures.get("Transit Size(MB)")) or 0.0
                        ms = number(figures.get("Transit Time(ms)")) or 0.0
                        got = sums[(str(group)[:128], rank, str(link)[:32])]
                        got[0] += size * MB
                        got[1] += ms
    data.links = [LinkRow(g, r, link, b, ms) for (g, r, link), (b, ms) in sorted(sums.items()) if b > 0]


def read_cluster(src: Source) -> ClusterData:
    data = ClusterData(str(src.path))
    for role, read in (("cluster_step_trace_time", _steps), ("cluster_communication", _links)):
        path = src.files.get(role)
        if path is None:
            continue
        try:
            read(path, data)
        except TraceError as exc:
            raise TraceError(f"{path.name}: {exc}") from None
    return data
