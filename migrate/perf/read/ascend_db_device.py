"""The device side of an Ascend .db export, and its analysis.db (the tables and roles:
ascend_db.py): compute tasks, collectives and their tasks, the overlap tracks, the
profiler's step breakdown and communication analysis."""

from __future__ import annotations

from typing import Any

from migrate.perf.read.ascend_comm import KINDS
from migrate.perf.read.ascend_db_host import MAX_ROWS, DbClock, column, named
from migrate.perf.read.ascend_hccl import MB, Collectives, add_link, add_size, finish_sizes, op_record
from migrate.perf.read.ascend_names import core_of, op_type
from migrate.perf.read.ascend_tables import STEP_TRACE_COLUMNS
from migrate.perf.read.ascend_trace_hccl import op_bytes
from migrate.perf.read.chrome import integer, number
from migrate.perf.read.sqlite_ro import Db
from migrate.perf.timeline import Timeline

__all__ = ["read_analysis_db", "read_device"]

SKIPPED_TYPES = frozenset({"WRITE_BACK", "INVALID", "HCCL_AI_CPU"})  # CANN's op summary leaves them out
COMM_KERNELS = ("AivKernel", "AicpuKernel")  # kernels a collective runs (msprof AIV_KERNEL, AICPU_KERNEL)
OVERLAP_KINDS = {
    "COMPUTE": "Computing",
    "COMMUNICATION": "Communication",
    "COMM_NOT_OVERLAP_COMP": "Communication(Not Overlapped)",
    "FREE": "Free",
}
TEXT = 4096


def _enum(db: Db, table: str) -> dict[int, str]:
    if db.table(table) is None:
        return {}
    return {
        k: v
        for k, v in db.rows(f"SELECT id, substr(name, 1, 64) FROM {table}", cap=10_000)
        if isinstance(v, str)
    }


def _name(enum: dict[int, str], value: Any) -> str:
    """The name an ENUM_* table gives ``value`` ("" when it gives none)."""
    key = integer(value)
    return enum.get(key, "") if key is not None else ""


def _strings(columns: list[str], names: tuple[str, ...]) -> tuple[list[str], str]:
    """Select expressions and joins of the STRING_IDS values of id columns ``names`` of ``c``."""
    exprs, joins = [], []
    for k, name in enumerate(names):
        if name in columns:
            exprs.append(f"substr(s{k}.value, 1, {TEXT})")
            joins.append(f"LEFT JOIN STRING_IDS s{k} ON s{k}.id = c.{name}")
        else:
            exprs.append("NULL")
    return exprs, " ".join(joins)


def _device(db: Db, tl: Timeline) -> int | None:
    """The device most tasks ran on (a rank has one); others are noted."""
    found = db.table("TASK")
    if found is None or "deviceId" not in found[1]:
        return None
    counts = list(db.rows("SELECT deviceId, COUNT(*) FROM TASK GROUP BY deviceId ORDER BY 2 DESC", cap=64))
    if len(counts) > 1:
        others = ", ".join(str(d) for d, _ in counts[1:6])
        tl.note(
            f"the .db holds tasks of devices {others} besides device {counts[0][0]}: only that one is read"
        )
    return integer(counts[0][0]) if counts else None


def _compute(db: Db, tl: Timeline, clock: DbClock, device: int | None, collectives: bool) -> None:
    info, task = db.table("COMPUTE_TASK_INFO"), db.table("TASK")
    if info is None or task is None:
        return
    exprs, joins = _strings(
        named(db, info[1]), ("name", "opType", "taskType", "inputShapes", "inputDataTypes", "opState")
    )
    where = "WHERE t.deviceId = ?" if device is not None else ""
    sql = (
        f"SELECT t.startNs, t.endNs, {column(task[1], 'streamId')}, {column(task[1], 'connectionId')}, "
        f"{', '.join(exprs)} FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId "
        f"{joins} {where}"
    )
    bad = 0
    for start, end, stream, conn, name, kind, core, shapes, dtypes, state in db.rows(
        sql, (device,) if device is not None else (), cap=MAX_ROWS
    ):
        got = clock.span(start, end)
        name = name if isinstance(name, str) else ""
        core = core if isinstance(core, str) else ""
        if got is None or not name:
            bad += 1
            continue
        if core in SKIPPED_TYPES or (collectives and core == "COMMUNICATION" and name.endswith(COMM_KERNELS)):
            continue
        tl.device_ops.append(
            start=got[0],
            dur=got[1],
            stream=integer(stream) if integer(stream) is not None else -1,
            launch=integer(conn) if integer(conn) is not None else -1,
            name=name,
            type=kind if isinstance(kind, str) and kind and kind != "N/A" else op_type(name),
            core=core_of(core, name),
            shapes=shapes if isinstance(shapes, str) and shapes != "N/A" else "",
            dtypes=dtypes if isinstance(dtypes, str) and dtypes != "N/A" else "",
            state=state if isinstance(state, str) else "",
        )
    if bad:
        tl.note(f"{bad} task(s) of COMPUTE_TASK_INFO without a usable time or name were skipped")
    if "opState" not in info[1]:
        tl.note("COMPUTE_TASK_INFO has no opState column: static or dynamic shapes are not known from it")


def _collectives(db: Db, tl: Timeline, clock: DbClock, device: int | None) -> Collectives | None:
    found = db.table("COMMUNICATION_OP")
    if found is None:
        return None
    cols = found[1]
    exprs, joins = _strings(named(db, cols), ("opName", "groupName"))
    dtypes = _enum(db, "ENUM_HCCL_DATA_TYPE")
    where = "WHERE c.deviceId = ?" if device is not None and "deviceId" in cols else ""
    sql = (
        f"SELECT c.startNs, c.endNs, {column(cols, 'opId', 'c.opId')}, "
        f"{column(cols, 'dataType', 'c.dataType')}, {column(cols, 'count', 'c.count')}, "
        f"{', '.join(exprs)} FROM COMMUNICATION_OP c {joins} {where}"
    )
    built, by_id = Collectives(), {}
    for start, end, op_id, dtype, count, name, group in db.rows(
        sql, (device,) if where else (), cap=MAX_ROWS
    ):
        got = clock.span(start, end)
        if got is None or not isinstance(name, str) or not name:
            continue
        group = group if isinstance(group, str) else ""
        tl.device_ops.append(
            start=got[0],
            dur=got[1],
            bytes=op_bytes(count, _name(dtypes, dtype)),
            launch=-1,
            name=name,
            type=op_type(name),
            core="HCCL",
            group=group,
        )
        index = built.add_op(name, group, got[0], got[1])
        if integer(op_id) is not None:
            by_id[integer(op_id)] = index
    _collective_tasks(db, clock, built, by_id)
    return built if built.ops else None


def _collective_tasks(db: Db, clock: DbClock, built: Collectives, by_id: dict[Any, int]) -> None:
    info, task = db.table("COMMUNICATION_TASK_INFO"), db.table("TASK")
    if info is None or task is None or not by_id:
        return
    transports, links = _enum(db, "ENUM_HCCL_TRANSPORT_TYPE"), _enum(db, "ENUM_HCCL_LINK_TYPE")
    exprs, joins = _strings(named(db, info[1]), ("taskType",))
    sql = (
        f"SELECT c.opId, {exprs[0]}, {column(info[1], 'transportType', 'c.transportType')}, "
        f"{column(info[1], 'linkType', 'c.linkType')}, {column(info[1], 'size', 'c.size')}, "
        "t.startNs, t.endNs "
        f"FROM COMMUNICATION_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId {joins}"
    )
    for op_id, name, transport, link, size, start, end in db.rows(sql, cap=MAX_ROWS):
        got, index = clock.span(start, end), by_id.get(integer(op_id))
        if got is None or index is None:
            continue
        nbytes = number(size)
        built.add_task(
            index,
            name if isinstance(name, str) else "",
            _name(transports, transport),
            _name(links, link),
            nbytes if nbytes is not None and nbytes >= 0 else 0.0,
            got[1],
        )


def _overlap(db: Db, tl: Timeline, clock: DbClock, device: int | None) -> None:
    found = db.table("OVERLAP_ANALYSIS")
    if found is None:
        return
    kinds = _enum(db, "ENUM_OVERLAP_ANALYSIS_TYPE")
    where = "WHERE deviceId = ?" if device is not None and "deviceId" in found[1] else ""
    sql = f"SELECT startNs, endNs, type FROM OVERLAP_ANALYSIS {where}"
    for start, end, kind in db.rows(sql, (device,) if where else (), cap=MAX_ROWS):
        got, name = clock.span(start, end), OVERLAP_KINDS.get(_name(kinds, kind))
        if got is not None and name is not None:
            tl.overlap.append(start=got[0], dur=got[1], kind=name)


def read_device(db: Db, tl: Timeline, clock: DbClock, source: str) -> None:
    """Tasks, collectives and overlap tracks of ``db`` (the file named ``source``) into ``tl``."""
    device = _device(db, tl)
    collectives = _collectives(db, tl, clock, device)
    _compute(db, tl, clock, device, collectives is not None)
    _overlap(db, tl, clock, device)
    if collectives is not None:
        tl.tables["communication"] = collectives.table(source)
    if len(tl.device_ops):
        tl.device = "npu"


# -- analysis.db -------------------------------------------------------------------------------


def _step_trace(db: Db, tl: Timeline) -> None:
    found = db.table("StepTraceTime")
    if found is None:
        return
    names = [k for k in STEP_TRACE_COLUMNS if k in found[1]]
    if "computing" not in names or "free" not in names:
        return
    figures = ", ".join("t." + n for n in names)
    sql = f"SELECT {column(found[1], 'step')}, {column(found[1], 'deviceId')}, {figures} FROM StepTraceTime t"
    out = []
    for step, device, *values in db.rows(sql, cap=1_000_000):
        row: dict[str, Any] = {"step": integer(step), "device": integer(device)}
        row.update({k: None for k in STEP_TRACE_COLUMNS})
        row.update({k: number(v) for k, v in zip(names, values, strict=True)})
        if row["computing"] is not None and row["free"] is not None:
            out.append(row)
    if out:
        tl.tables["step_trace_time"] = out
        tl.facts["step_trace_source"] = "analysis.db StepTraceTime"


def _comm_analysis(db: Db, tl: Timeline) -> None:
    time, band = db.table("CommAnalyzerTime"), db.table("CommAnalyzerBandwidth")
    if time is None:
        return
    ops: dict[tuple[str, str], dict[str, Any]] = {}
    cols = time[1]
    sql = (
        "SELECT t.hccl_op_name, t.group_name, t.start_timestamp, t.elapse_time, t.transit_time, t.wait_time, "
        f"t.synchronization_time, t.idle_time, {column(cols, 'step')}, {column(cols, 'type')} "
        "FROM CommAnalyzerTime t"
    )
    for name, group, start, *figures, step, kind in db.rows(sql, cap=MAX_ROWS):
        if not isinstance(name, str) or name.lower().startswith("total"):
            continue
        group = group if isinstance(group, str) else ""
        op = op_record(name, group, step=step if isinstance(step, str) else None, start_us=number(start))
        if kind in KINDS:
            op["kind"] = kind
        for field, value in zip(
            ("elapse_ms", "transit_ms", "wait_ms", "synchronization_ms", "idle_ms"), figures
        ):
            got = number(value)
            op[field] = got if got is not None and got >= 0 else None
        ops.setdefault((name, group), op)
    if band is not None:
        _bandwidth(db, ops)
    for op in ops.values():
        finish_sizes(op)
    tl.tables["communication"] = {"source": "analysis.db", "ops": list(ops.values())}


def _bandwidth(db: Db, ops: dict[tuple[str, str], dict[str, Any]]) -> None:
    """Each (op, transport)'s totals once (the writer repeats them on each package-size row),
    and each package size's count and time."""
    seen: set[tuple[str, str, str]] = set()
    sql = (
        "SELECT hccl_op_name, group_name, transport_type, transit_size, transit_time, package_size, count, "
        "total_duration FROM CommAnalyzerBandwidth"
    )
    for name, group, transport, size, ms, package, count, total in db.rows(sql, cap=MAX_ROWS):
        op = ops.get((name, group if isinstance(group, str) else ""))
        if op is None or not isinstance(transport, str):
            continue
        link = transport[:32]
        if (name, op["group"], link) not in seen:
            seen.add((name, op["group"], link))
            b, t = number(size), number(ms)
            if (b or 0) > 0 or (t or 0) > 0:
                add_link(op, link, max(b or 0.0, 0.0) * MB, max(t or 0.0, 0.0))
        p, n, d = number(package), number(count), number(total)
        if p is not None and p >= 0 and n is not None and 1 <= n < 1 << 53:
            add_size(op, link, p * MB, int(n), max(d or 0.0, 0.0))


def _matrix(db: Db, tl: Timeline) -> None:
    found = db.table("CommAnalyzerMatrix")
    if found is None:
        return
    sql = (
        f"SELECT t.hccl_op_name, t.group_name, t.src_rank, t.dst_rank, t.transport_type, t.transit_size, "
        f"t.transit_time, {column(found[1], 'step')} FROM CommAnalyzerMatrix t"
    )
    rows = []
    for name, group, src, dst, transport, size, ms, step in db.rows(sql, cap=MAX_ROWS):
        a, b = integer(src), integer(dst)
        if (
            not isinstance(name, str)
            or a is None
            or b is None
            or ("-" in name and not name.endswith("-total"))
        ):
            continue
        rows.append(
            {
                "op": name.removesuffix("-total")[:128],
                "group": group[:256] if isinstance(group, str) else "",
                "step": step if isinstance(step, str) else None,
                "src": a,
                "dst": b,
                "transport": transport[:32] if isinstance(transport, str) else "",
                "bytes": max(number(size) or 0.0, 0.0) * MB,
                "ms": max(number(ms) or 0.0, 0.0),
            }
        )
    tl.tables["communication_matrix"] = rows


def read_analysis_db(db: Db, tl: Timeline) -> None:
    """analysis.db's step breakdown and communication analysis into ``tl``."""
    _step_trace(db, tl)
    _comm_analysis(db, tl)
    _matrix(db, tl)
