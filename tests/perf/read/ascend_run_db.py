"""An ascend_run.Run written as the .db export: ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_{rank}.db
and analysis.db.

The framework tables (PYTORCH_API, CONNECTION_IDS, PYTORCH_CALLCHAINS, STEP_TIME, META_DATA,
RANK_DEVICE_MAP, ENUM_API_TYPE, STRING_IDS, and analysis.db's StepTraceTime, CommAnalyzer*)
get the columns the torch_npu 2.14.0 wheel defines (TableColumnsManager.TableColumns in
prof_common_func/_constant.py, read from the wheel with ``ast``: nothing of it is imported).
CANN's tables (TASK, COMPUTE_TASK_INFO, COMMUNICATION_OP, COMMUNICATION_TASK_INFO, CANN_API,
NPU_INFO, ENUM_HCCL_*) come from CANN's msprof export, not from the wheel: their columns are
those of CANN's "Profile Data File Reference (DB)" (CANN 8.5 / 9.0), written out below.
"""

from __future__ import annotations

import ast
import json
import sqlite3
import zipfile
from functools import cache
from pathlib import Path

from ascend_run import Run
from npu_wheel import wheel_path

CONSTANT = "torch_npu/profiler/analysis/prof_common_func/_constant.py"
# CANN's tables (msprof "Profile Data File Reference (DB)"), as CANN 8.x/9.x writes them.
CANN_TABLES = {
    "TASK": [
        "startNs",
        "endNs",
        "deviceId",
        "connectionId",
        "globalTaskId",
        "globalPid",
        "taskType",
        "contextId",
        "streamId",
        "taskId",
        "modelId",
    ],
    "COMPUTE_TASK_INFO": [
        "name",
        "globalTaskId",
        "blockDim",
        "mixBlockDim",
        "taskType",
        "opType",
        "inputFormats",
        "inputDataTypes",
        "inputShapes",
        "outputFormats",
        "outputDataTypes",
        "outputShapes",
        "attrInfo",
        "opState",
        "hf32Eligible",
    ],
    "COMMUNICATION_OP": [
        "opName",
        "startNs",
        "endNs",
        "connectionId",
        "groupName",
        "opId",
        "relay",
        "retry",
        "dataType",
        "algType",
        "count",
        "opType",
        "deviceId",
    ],
    "COMMUNICATION_TASK_INFO": [
        "name",
        "globalTaskId",
        "taskType",
        "planeId",
        "groupName",
        "notifyId",
        "rdmaType",
        "srcRank",
        "dstRank",
        "transportType",
        "size",
        "dataType",
        "linkType",
        "opId",
        "isMaster",
        "bandwidth",
    ],
    "CANN_API": ["startNs", "endNs", "type", "globalTid", "connectionId", "name"],
    "NPU_INFO": ["id", "name"],
    "ENUM_HCCL_DATA_TYPE": ["id", "name"],
    "ENUM_HCCL_LINK_TYPE": ["id", "name"],
    "ENUM_HCCL_TRANSPORT_TYPE": ["id", "name"],
}
DTYPES = {"INT8": 0, "INT16": 1, "INT32": 2, "FP16": 3, "FP32": 4, "INT64": 5, "BFP16": 11}
LINKS = {"ON_CHIP": 0, "HCCS": 1, "PCIE": 2, "ROCE": 3, "SIO": 4, "HCCS_SW": 5}
TRANSPORTS = {"SDMA": 0, "RDMA": 1, "LOCAL": 2}


@cache
def wheel_tables() -> dict[str, list[tuple[str, str]]]:
    """TableColumnsManager.TableColumns of the torch_npu wheel: table -> [(column, type)]."""
    tree = ast.parse(zipfile.ZipFile(wheel_path("2.14.0")).read(CONSTANT).decode())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def constants(cls: str) -> dict[str, object]:
        out = {}
        for node in classes[cls].body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                out.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
        return out

    names = {"DbConstant": constants("DbConstant"), "Constant": constants("Constant")}

    def value(node: ast.AST) -> object:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return names[node.value.id][node.attr]
        return ast.literal_eval(node)

    for node in classes["TableColumnsManager"].body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            return {
                str(value(k)): [(str(value(e.elts[0])), str(value(e.elts[1]))) for e in v.elts]  # type: ignore[union-attr]
                for k, v in zip(node.value.keys, node.value.values, strict=True)
                if k is not None
            }
    raise AssertionError("no TableColumns in the wheel's _constant.py")


class Strings:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, text: str | None) -> int | None:
        if not text:
            return None
        return self.ids.setdefault(text, len(self.ids) + 1)


def _create(conn: sqlite3.Connection, table: str, columns: list[str] | None = None) -> list[str]:
    if columns is None:
        typed = wheel_tables()[table]
        conn.execute(f"CREATE TABLE {table} ({', '.join(f'{c} {t}' for c, t in typed)})")
        return [c for c, _ in typed]
    conn.execute(f"CREATE TABLE {table} ({', '.join(columns)})")
    return columns


def _insert(conn: sqlite3.Connection, table: str, columns: list[str], rows: list[dict]) -> None:
    if rows:
        conn.executemany(
            f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})",
            [[r.get(c) for c in columns] for r in rows],
        )


def write_db(
    run: Run, root: Path, name: str = "run", analysis: bool = True, drop: tuple[str, ...] = ()
) -> Path:
    """The .db export of ``run`` under ``root``; ``drop`` leaves out tables or columns
    (``"COMPUTE_TASK_INFO.opState"``) as older writers do. The result folder."""
    result = root / f"{name}_{run.rank}_ascend_pt"
    out = result / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (result / f"profiler_info_{run.rank}.json").write_text(json.dumps({"rank_id": run.rank}))
    with sqlite3.connect(out / f"ascend_pytorch_profiler_{run.rank}.db") as conn:
        _main_db(conn, run, drop)
    if analysis:
        with sqlite3.connect(out / "analysis.db") as conn:
            _analysis_db(conn, run)
    return result


def _table(conn, drop, table, rows, columns=None) -> None:
    if table in drop:
        return
    cols = _create(conn, table, [c for c in (columns or []) if f"{table}.{c}" not in drop] or None)
    _insert(conn, table, cols, rows)


def _row(table: str, *values) -> dict:
    """A row of one of CANN's tables, its values in CANN_TABLES's column order."""
    return dict(zip(CANN_TABLES[table], values, strict=False))


class _Rows:
    """The rows of every table of the .db, built from the run."""

    def __init__(self, run: Run) -> None:
        self.run, self.s = run, Strings()
        self.tasks: list[dict] = []
        self.compute: list[dict] = []
        self.cann: list[dict] = []
        self.connections: list[dict] = []
        self.comm_ops: list[dict] = []
        self.comm_tasks: list[dict] = []
        self.api = [self._api(i, op) for i, op in enumerate(run.ops)]
        self.chains = [
            {"id": i, "stack": self.s(frame), "stackDepth": d}
            for i, op in enumerate(run.ops)
            for d, frame in enumerate(op.stack)
        ]
        self._kernels()
        self._collectives()

    def gtid(self, tid: int) -> int:
        return (self.run.pid << 32) | tid  # contact_2num(pid, tid)

    def _api(self, i: int, op) -> dict:
        s = self.s
        return {
            "startNs": str(op.start),
            "endNs": str(op.end),
            "globalTid": self.gtid(op.tid),
            "name": s(op.name),
            "connectionId": None,
            "inputShapes": s(op.shapes),
            "inputDtypes": s(op.dtypes),
            "callchainId": i if op.stack else None,
            "type": 50001,
        }

    def _kernels(self) -> None:
        run, s = self.run, self.s
        for g, k in enumerate(run.kernels):
            conn = 1000 + g
            self.tasks.append(
                _row(
                    "TASK",
                    k.start,
                    k.start + k.dur,
                    run.device,
                    conn,
                    g,
                    run.pid,
                    s("KERNEL_AICORE"),
                    0,
                    k.stream,
                    g,
                    4294967295,
                )
            )
            self.compute.append(
                _row(
                    "COMPUTE_TASK_INFO",
                    s(k.name),
                    g,
                    24,
                    0,
                    s(k.core),
                    s(k.type),
                    None,
                    s(k.dtypes),
                    s(k.shapes),
                    None,
                    None,
                    None,
                    None,
                    s(k.state),
                    s("NO"),
                )
            )
            if k.launcher is not None:
                op = run.ops[k.launcher]
                self.api[k.launcher]["connectionId"] = len(self.connections)
                self.connections.append({"id": len(self.connections), "connectionId": conn})
                self.cann.append(
                    _row(
                        "CANN_API",
                        op.start + 1000,
                        op.start + 6000,
                        10000,
                        self.gtid(op.tid),
                        conn,
                        s("launch"),
                    )
                )

    def _collectives(self) -> None:
        run, s = self.run, self.s
        for o, c in enumerate(run.collectives):
            self.comm_ops.append(
                _row(
                    "COMMUNICATION_OP",
                    s(c.name),
                    c.start,
                    c.end,
                    5000 + o,
                    s(c.group),
                    o,
                    0,
                    0,
                    DTYPES[c.dtype],
                    s("HD-MESH"),
                    c.count,
                    s("hcom_allReduce_"),
                    run.device,
                )
            )
            for t in c.tasks:
                g = len(self.tasks)
                self.tasks.append(
                    _row(
                        "TASK",
                        t.start,
                        t.start + t.dur,
                        run.device,
                        5000 + o,
                        g,
                        run.pid,
                        s("SDMA"),
                        0,
                        t.stream,
                        g,
                    )
                )
                self.comm_tasks.append(
                    _row(
                        "COMMUNICATION_TASK_INFO",
                        s(c.name),
                        g,
                        s(t.name),
                        t.plane,
                        s(c.group),
                        None,
                        None,
                        None,
                        None,
                        TRANSPORTS[t.transport],
                        t.size,
                        4,
                        LINKS.get(t.link, 255),
                        o,
                        1,
                    )
                )


def _main_db(conn: sqlite3.Connection, run: Run, drop: tuple[str, ...]) -> None:
    r = _Rows(run)
    _table(conn, drop, "PYTORCH_API", r.api)
    _table(conn, drop, "PYTORCH_CALLCHAINS", r.chains)
    _table(conn, drop, "CONNECTION_IDS", r.connections)
    _table(conn, drop, "STEP_TIME", [{"id": sid, "startNs": a, "endNs": b} for sid, a, b in run.steps])
    api_types = ((50001, "op"), (50002, "queue"), (50003, "trace"), (50004, "mstx"))
    _table(conn, drop, "ENUM_API_TYPE", [{"id": i, "name": n} for i, n in api_types])
    meta = [
        {"name": "ENV_VARIABLES", "value": json.dumps(run.env)},
        {"name": "SCHEMA_VERSION", "value": "1.0.2"},
    ]
    _table(conn, drop, "META_DATA", meta)
    _table(conn, drop, "RANK_DEVICE_MAP", [{"rankId": run.rank, "deviceId": run.device}])
    for table, rows in (
        ("TASK", r.tasks),
        ("COMPUTE_TASK_INFO", r.compute),
        ("CANN_API", r.cann),
        ("COMMUNICATION_OP", r.comm_ops),
        ("COMMUNICATION_TASK_INFO", r.comm_tasks),
        ("NPU_INFO", [{"id": run.device, "name": run.chip}]),
    ):
        _table(conn, drop, table, rows, CANN_TABLES[table])
    for table, values in (
        ("ENUM_HCCL_DATA_TYPE", DTYPES),
        ("ENUM_HCCL_LINK_TYPE", LINKS),
        ("ENUM_HCCL_TRANSPORT_TYPE", TRANSPORTS),
    ):
        _table(conn, drop, table, [{"id": v, "name": k} for k, v in values.items()], CANN_TABLES[table])
    _table(conn, drop, "STRING_IDS", [{"id": v, "value": k} for k, v in r.s.ids.items()])


def _analysis_db(conn: sqlite3.Connection, run: Run) -> None:
    steps = [
        {
            "deviceId": run.device,
            "step": str(f["step"]),
            **{k: v for k, v in f.items() if k != "step"},
            "stage": 0,
            "bubble": 0,
            "preparing": 0,
            "communication_not_overlapped_and_exclude_receive": f["communication_not_overlapped"],
        }
        for f in run.step_figures()
    ]
    _table(conn, (), "StepTraceTime", steps)
    times, bands = [], []
    for step, kinds in run.communication().items():
        for kind, ops in kinds.items():
            for key, info in ops.items():
                if key == "Total Op Info":
                    continue
                name, group = key.split("@")
                t = info["Communication Time Info"]
                times.append(
                    {
                        "hccl_op_name": name,
                        "group_name": group,
                        "start_timestamp": t["Start Timestamp(us)"],
                        "elapse_time": t["Elapse Time(ms)"],
                        "transit_time": t["Transit Time(ms)"],
                        "wait_time": t["Wait Time(ms)"],
                        "synchronization_time": t["Synchronization Time(ms)"],
                        "idle_time": t["Idle Time(ms)"],
                        "step": step,
                        "type": kind,
                    }
                )
                for link, b in info["Communication Bandwidth Info"].items():
                    if not b["Transit Size(MB)"] and not b["Transit Time(ms)"]:
                        continue
                    common = {
                        "hccl_op_name": name,
                        "group_name": group,
                        "transport_type": link,
                        "transit_size": b["Transit Size(MB)"],
                        "transit_time": b["Transit Time(ms)"],
                        "bandwidth": b["Bandwidth(GB/s)"],
                        "large_packet_ratio": 0,
                        "step": step,
                        "type": kind,
                    }
                    dist = b["Size Distribution"] or {0: [0, 0]}
                    for size, (count, ms) in dist.items():  # one row per package size, totals repeated
                        bands.append(
                            {**common, "package_size": float(size), "count": count, "total_duration": ms}
                        )
    _table(conn, (), "CommAnalyzerTime", times)
    _table(conn, (), "CommAnalyzerBandwidth", bands)
