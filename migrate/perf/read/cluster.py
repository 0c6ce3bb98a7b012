"""msprof-analyze cluster output (``cluster_analysis_output/``) -> per-rank step rows,
per-link communication figures and the communication matrix.

Text output (``msprof-analyze cluster -m all --export_type text``):

* ``cluster_step_trace_time.csv``: one row per rank (``Type`` rank, ``Index`` the rank id)
  and stage rows (skipped), with the columns of step_trace_time.csv; the ``Step`` column is
  empty when the job's steps were merged.
* ``cluster_communication.json``: ``{rank set: {step: {"<op>@<group>": {rank: {"Communication
  Time Info": {...}, "Communication Bandwidth Info": {link type: {"Transit Size(MB)",
  "Transit Time(ms)", "Bandwidth(GB/s)", "Size Distribution": {size MB: [count, ms]}}}}}}}}``.
  Each (rank set, rank, link type) becomes a :class:`LinkRow` summed over the group's
  collectives; the writer's own sums (an op key ``Total Op Info@<group>``, a rank key
  ``total``) are skipped, so nothing counts twice.
* ``cluster_communication_matrix.json``: ``{rank set: {step: {"<op>@<group>": {"<src>-<dst>":
  {"Transport Type", "Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)"}}}}}`` with
  global ranks; its ``Total Op Info@<group>`` entries (the writer's sum of each group's ops),
  else the ops themselves, become :class:`LinkPair` rows (a rank's link to itself skipped).

Database output (``cluster_analysis.db``, msprof-analyze 8.x and 26.x, or CANN's own
``ClusterCommAnalyzer*`` names): ``ClusterStepTraceTime(step, type, index, computing,
communication_not_overlapped, communication, free, ...)``, ``ClusterCommunicationBandwidth(step,
rank_id, hccl_op_name, group_name, band_type, transit_size, transit_time, package_size, count,
total_duration)`` (one row per package size, the transit totals repeated on each: read once
per op, rank and link) and ``ClusterCommunicationMatrix(hccl_op_name, group_name, src_rank,
dst_rank, transport_type, transit_size, transit_time)``, with ``CommunicationGroupMapping
(group_name, rank_set)`` naming each group by its ranks.

Units: MB is 10**6 bytes (read/ascend_hccl.py: CANN's writer), so a row's bandwidth equals the
file's own Bandwidth(GB/s).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.perf.model import LinkPair, LinkRow, StepBreakdown
from migrate.perf.read.ascend_hccl import MB
from migrate.perf.read.ascend_tables import rows
from migrate.perf.read.chrome import integer, number
from migrate.perf.read.discover import Source
from migrate.perf.read.jsonstream import TraceError, load_json
from migrate.perf.read.sqlite_ro import Db, open_db

__all__ = ["ClusterData", "LinkPair", "LinkRow", "read_cluster"]

MAX_JSON = 1 << 30
MAX_ROWS = 20_000_000
TOTAL = "Total Op Info"
# The link matrix's columns, under either of its table names.
_MATRIX = (
    "hccl_op_name",
    "group_name",
    "src_rank",
    "dst_rank",
    "transport_type",
    "transit_size",
    "transit_time",
)
# The columns each table of cluster_analysis.db must have to be read.
NEEDS = {
    "ClusterStepTraceTime": ("type", "index", "computing", "free"),
    "CommunicationGroupMapping": ("group_name", "rank_set"),
    "CommunicationGroup": ("group_name", "rank_set"),
    "ClusterCommunicationBandwidth": (
        "step",
        "rank_id",
        "hccl_op_name",
        "group_name",
        "transit_size",
        "transit_time",
    ),
    "ClusterCommAnalyzerBandwidth": (
        "step",
        "rank_id",
        "hccl_op_name",
        "group_name",
        "transit_size",
        "transit_time",
    ),
    "ClusterCommunicationMatrix": _MATRIX,
    "ClusterCommAnalyzerMatrix": _MATRIX,
}
Sums = dict[tuple[str, int, str], list[float]]


@dataclass
class ClusterData:
    path: str
    steps: dict[int, list[StepBreakdown]] = field(default_factory=dict)
    links: list[LinkRow] = field(default_factory=list)
    pairs: list[LinkPair] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _finite(value: Any) -> float:
    got = number(value)
    return got if got is not None and got > 0 else 0.0


def _step_row(data: ClusterData, row: dict[str, Any]) -> None:
    rank = integer(str(row.get("index") or "").strip())
    computing, free = number(row.get("computing")), number(row.get("free"))
    if rank is None or computing is None or free is None:
        return
    exposed = number(row.get("communication_not_overlapped")) or 0.0
    total = computing + exposed + free
    step = integer(str(row.get("step") or "").strip().removeprefix("step"))
    data.steps.setdefault(rank, []).append(
        StepBreakdown(
            rank,
            step,
            round(total, 3),
            computing,
            exposed,
            free,
            number(row.get("communication")) or 0.0,
            "cluster",
        )
    )


def _steps(path: Path, data: ClusterData) -> None:
    for row in rows(path):
        if row.get("Type", "").strip() != "rank":
            continue
        _step_row(
            data,
            {
                "index": row.get("Index"),
                "step": row.get("Step"),
                "computing": row.get("Computing"),
                "free": row.get("Free"),
                "communication_not_overlapped": row.get("Communication(Not Overlapped)"),
                "communication": row.get("Communication"),
            },
        )


def _add(sums: Sums, group: str, rank: int, link: str, size_mb: Any, ms: Any) -> None:
    got = sums[(str(group)[:128], rank, str(link)[:32])]
    got[0] += _finite(size_mb) * MB
    got[1] += _finite(ms)


def _links(path: Path, data: ClusterData) -> None:
    doc = load_json(path, MAX_JSON)
    if not isinstance(doc, dict):
        raise TraceError("not a mapping of communication groups")
    sums: Sums = defaultdict(lambda: [0.0, 0.0])
    for group, steps in doc.items():
        for ops in steps.values() if isinstance(steps, dict) else ():
            for op, per_rank in ops.items() if isinstance(ops, dict) else ():
                if str(op).startswith(TOTAL) or not isinstance(per_rank, dict):
                    continue
                for rank_key, info in per_rank.items():
                    rank = integer(rank_key)
                    bw = info.get("Communication Bandwidth Info") if isinstance(info, dict) else None
                    if rank is None or not isinstance(bw, dict):
                        continue
                    for link, figures in bw.items():
                        if isinstance(figures, dict):
                            _add(
                                sums,
                                group,
                                rank,
                                link,
                                figures.get("Transit Size(MB)"),
                                figures.get("Transit Time(ms)"),
                            )
    data.links = [LinkRow(g, r, link, b, ms) for (g, r, link), (b, ms) in sorted(sums.items()) if b > 0]


def _pair_sums(ops: dict, sums: dict[tuple[str, int, int, str], list[float]], group: str) -> None:
    totals = {op: v for op, v in ops.items() if str(op).startswith(TOTAL)}
    chosen = totals or {
        op: v for op, v in ops.items() if not any(k in str(op) for k in ("-top", "-middle", "-bottom"))
    }
    for links in chosen.values():
        for pair, figures in links.items() if isinstance(links, dict) else ():
            src, _, dst = str(pair).partition("-")
            a, b = integer(src), integer(dst)
            if a is None or b is None or a == b or not isinstance(figures, dict):
                continue
            got = sums[(group, a, b, str(figures.get("Transport Type", ""))[:32])]
            got[0] += _finite(figures.get("Transit Size(MB)")) * MB
            got[1] += _finite(figures.get("Transit Time(ms)"))


def _matrix(path: Path, data: ClusterData) -> None:
    doc = load_json(path, MAX_JSON)
    if not isinstance(doc, dict):
        raise TraceError("not a mapping of communication groups")
    sums: dict[tuple[str, int, int, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for group, steps in doc.items():
        for ops in steps.values() if isinstance(steps, dict) else ():
            if isinstance(ops, dict):
                _pair_sums(ops, sums, str(group)[:128])
    data.pairs = [LinkPair(g, a, b, t, n, ms) for (g, a, b, t), (n, ms) in sorted(sums.items()) if n > 0]


def _db(path: Path, data: ClusterData) -> None:
    with open_db(path, NEEDS) as db:  # what the text files gave already is not read again
        found = db.table("ClusterStepTraceTime") if not data.steps else None
        if found is not None:
            names = [
                c
                for c in (
                    "step",
                    "type",
                    "index",
                    "computing",
                    "communication_not_overlapped",
                    "communication",
                    "free",
                )
                if c in found[1]
            ]
            sql = f"SELECT {', '.join(f'[{c}]' for c in names)} FROM ClusterStepTraceTime"
            for values in db.rows(sql, cap=1_000_000):
                row = dict(zip(names, values, strict=True))
                if str(row.get("type", "")).strip() == "rank":
                    _step_row(data, row)
        groups = _group_names(db)
        if not data.links:
            _db_links(db, data, groups)
        if not data.pairs:
            _db_pairs(db, data, groups)


def _group_names(db: Db) -> dict[str, str]:
    found = db.table("CommunicationGroupMapping", "CommunicationGroup")
    if found is None or "group_name" not in found[1] or "rank_set" not in found[1]:
        return {}
    sql = f"SELECT group_name, rank_set FROM {found[0]}"
    return {str(g): str(r)[:128] for g, r in db.rows(sql, cap=100_000) if g is not None and r is not None}


def _db_links(db: Db, data: ClusterData, groups: dict[str, str]) -> None:
    found = db.table("ClusterCommunicationBandwidth", "ClusterCommAnalyzerBandwidth")
    if found is None:
        return
    kind = "band_type" if "band_type" in found[1] else "transport_type"
    sql = (
        f"SELECT step, rank_id, hccl_op_name, group_name, {kind}, transit_size, transit_time FROM {found[0]}"
    )
    sums: Sums = defaultdict(lambda: [0.0, 0.0])
    seen: set[tuple] = set()
    for step, rank_id, op, group, link, size, ms in db.rows(sql, cap=MAX_ROWS):
        rank = integer(rank_id)
        if rank is None or not isinstance(op, str) or op.startswith(TOTAL) or not isinstance(link, str):
            continue
        key = (step, rank, op, group, link)
        if key in seen:  # the transit totals are repeated on each package-size row
            continue
        seen.add(key)
        _add(sums, groups.get(str(group), str(group)), rank, link, size, ms)
    data.links = [LinkRow(g, r, link, b, ms) for (g, r, link), (b, ms) in sorted(sums.items()) if b > 0]


def _db_pairs(db: Db, data: ClusterData, groups: dict[str, str]) -> None:
    found = db.table("ClusterCommunicationMatrix", "ClusterCommAnalyzerMatrix")
    if found is None:
        return
    columns = "hccl_op_name, group_name, src_rank, dst_rank, transport_type, transit_size, transit_time"
    sql = f"SELECT {columns} FROM {found[0]}"
    ops: dict[str, dict[str, dict[str, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for op, group, src, dst, transport, size, ms in db.rows(sql, cap=MAX_ROWS):
        if not isinstance(op, str):
            continue
        ops[groups.get(str(group), str(group))][f"{op}@{group}"][f"{src}-{dst}"] = {
            "Transport Type": transport,
            "Transit Size(MB)": size,
            "Transit Time(ms)": ms,
        }
    sums: dict[tuple[str, int, int, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for group, by_op in ops.items():
        _pair_sums(by_op, sums, group[:128])
    data.pairs = [LinkPair(g, a, b, t, n, ms) for (g, a, b, t), (n, ms) in sorted(sums.items()) if n > 0]


READERS = (
    ("cluster_step_trace_time", _steps),
    ("cluster_communication", _links),
    ("cluster_communication_matrix", _matrix),
    ("cluster_db", _db),
)


def read_cluster(src: Source) -> ClusterData:
    data = ClusterData(str(src.path))
    for role, read in READERS:
        path = src.files.get(role)
        if path is None:
            continue
        try:
            read(path, data)
        except TraceError as exc:
            raise TraceError(f"{path.name}: {exc}") from None
    return data
