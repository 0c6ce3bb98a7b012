"""msprof-analyze's cluster output of a few ascend_run.Run ranks, written as its text files
(cluster_step_trace_time.csv, cluster_communication.json, cluster_communication_matrix.json)
and as cluster_analysis.db, in the shapes msprof-analyze 26.2 writes them: the text files as
cluster_analyse/analysis/*.py dump them (a ``Total Op Info@<group>`` sum per group and step),
the .db with the columns of cluster_analyse/common_func/tables_config.py (ClusterStepTraceTime,
ClusterCommunicationBandwidth one row per package size with the transit totals repeated,
ClusterCommunicationMatrix, CommunicationGroupMapping)."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

from ascend_run import FIGURE_HEADER, Run, figure_row
from ascend_run_text import matrix

STEP_COLUMNS = [
    "step",
    "type",
    "index",
    "computing",
    "communication_not_overlapped",
    "overlapped",
    "communication",
    "free",
    "stage",
    "bubble",
    "communication_not_overlapped_and_exclude_receive",
    "preparing",
    "dp_index",
    "pp_index",
    "tp_index",
]
BAND_COLUMNS = [
    "step",
    "rank_id",
    "hccl_op_name",
    "group_name",
    "band_type",
    "transit_size",
    "transit_time",
    "bandwidth",
    "large_packet_ratio",
    "package_size",
    "count",
    "total_duration",
]
MATRIX_COLUMNS = [
    "step",
    "hccl_op_name",
    "group_name",
    "src_rank",
    "dst_rank",
    "transit_size",
    "transit_time",
    "bandwidth",
    "transport_type",
    "op_name",
]


def rank_set(runs: list[Run], sep: str = ", ") -> str:
    return "(" + sep.join(str(r.rank) for r in runs) + ")"


def communication(runs: list[Run]) -> dict:
    """cluster_communication.json: {rank set: {step: {op@group: {rank: info}, Total Op Info@group}}}."""
    steps: dict[str, dict] = {}
    for run in runs:
        for step, kinds in run.communication().items():
            for ops in kinds.values():
                for key, info in ops.items():
                    if key != "Total Op Info":
                        steps.setdefault(step, {}).setdefault(key, {})[str(run.rank)] = info
    for ops in steps.values():
        group = next(iter(ops)).split("@")[1]
        total: dict[str, dict] = {}
        for per_rank in list(ops.values()):
            for rank, info in per_rank.items():
                got = total.setdefault(rank, {"Communication Bandwidth Info": {}})
                for link, b in info["Communication Bandwidth Info"].items():
                    sums = got["Communication Bandwidth Info"].setdefault(
                        link, {"Transit Size(MB)": 0.0, "Transit Time(ms)": 0.0}
                    )
                    sums["Transit Size(MB)"] += b["Transit Size(MB)"]
                    sums["Transit Time(ms)"] += b["Transit Time(ms)"]
        ops[f"Total Op Info@{group}"] = total
    return {rank_set(runs): steps}


def cluster_matrix(runs: list[Run]) -> dict:
    """cluster_communication_matrix.json: each group's ops with global rank links."""
    steps: dict[str, dict] = {}
    for run in runs:
        for step, kinds in matrix(run).items():
            for key, links in kinds["collective"].items():
                if "-total@" in key:
                    group = key.split("@")[1]
                    steps.setdefault(step, {}).setdefault(f"Total Op Info@{group}", {}).update(links)
    return {rank_set(runs): steps}


def write_cluster_text(runs: list[Run], folder: Path) -> Path:
    out = folder / "cluster_analysis_output"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "cluster_step_trace_time.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["Step", "Type", "Index", *FIGURE_HEADER])
        for run in runs:
            for f in run.step_figures():
                w.writerow([f["step"], "rank", run.rank, *figure_row(f)])
    (out / "cluster_communication.json").write_text(json.dumps(communication(runs)))
    (out / "cluster_communication_matrix.json").write_text(json.dumps(cluster_matrix(runs)))
    return out


def _rows(runs: list[Run]) -> tuple[list, list, list]:
    steps, bands, links = [], [], []
    for run in runs:
        for f in run.step_figures():
            steps.append([str(f["step"]), "rank", str(run.rank), *figure_row(f), 0, 0, 0])  # dp, pp, tp
        for step, kinds in run.communication().items():
            for ops in kinds.values():
                for key, info in ops.items():
                    if key == "Total Op Info":
                        continue
                    name, group = key.split("@")
                    for link, b in info["Communication Bandwidth Info"].items():
                        if not b["Transit Size(MB)"]:
                            continue
                        head = [
                            step,
                            run.rank,
                            name,
                            group,
                            link,
                            b["Transit Size(MB)"],
                            b["Transit Time(ms)"],
                            b["Bandwidth(GB/s)"],
                            0,
                        ]
                        for size, (count, ms) in (b["Size Distribution"] or {"0": [0, 0]}).items():
                            bands.append([*head, float(size), count, ms])
        for step, kinds in matrix(run).items():
            for key, pairs in kinds["collective"].items():
                op, group = key.split("@")
                for pair, f in pairs.items():
                    src, dst = pair.split("-")
                    links.append(
                        [
                            step,
                            op,
                            group,
                            src,
                            dst,
                            f["Transit Size(MB)"],
                            f["Transit Time(ms)"],
                            f["Bandwidth(GB/s)"],
                            f["Transport Type"],
                            f["Op Name"],
                        ]
                    )
    return steps, bands, links


def write_cluster_db(runs: list[Run], folder: Path) -> Path:
    out = folder / "cluster_analysis_output"
    out.mkdir(parents=True, exist_ok=True)
    steps, bands, links = _rows(runs)
    with sqlite3.connect(out / "cluster_analysis.db") as conn:
        for table, columns, rows in (
            ("ClusterStepTraceTime", STEP_COLUMNS, steps),
            ("ClusterCommunicationBandwidth", BAND_COLUMNS, bands),
            ("ClusterCommunicationMatrix", MATRIX_COLUMNS, links),
            (
                "CommunicationGroupMapping",
                ["type", "rank_set", "group_name", "group_id", "pg_name"],
                [["collective", rank_set(runs, ","), "12345", "", ""]],
            ),
        ):
            conn.execute(f"CREATE TABLE {table} ({', '.join(f'[{c}]' for c in columns)})")
            conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})", rows)
    return out
