"""The host side of an Ascend .db export (the tables and roles: ascend_db.py): steps,
framework ops, Python frames, the task queue, CANN API calls, and the launches that tie
each task's connection id to the call that launched it."""

from __future__ import annotations

from typing import Any

from migrate.perf.read.chrome import HostSide, integer
from migrate.perf.read.sqlite_ro import Db
from migrate.perf.timeline import Step, Timeline

__all__ = ["MAX_ROWS", "DbClock", "column", "named", "read_host"]

MAX_ROWS = 20_000_000  # rows read from one table
MAX_TEXT = 4096
FRAMEWORK_CONNECTION = 5 << 28  # torch_npu's own connection ids (fwd/bwd, task queue) start here
API_TYPES = {50001: "op", 50002: "queue", 50003: "trace", 50004: "mstx"}
CANN_LEVELS = {20000: "AscendCL", 15000: "Model", 10000: "Node", 5500: "Communication", 5000: "Runtime"}
NODE_LEVEL = 10000


class DbClock:
    """Integer nanoseconds (INTEGER or TEXT) -> microseconds since the first time seen."""

    def __init__(self) -> None:
        self.base: int | None = None

    def ns(self, value: Any) -> int | None:
        got = integer(value)
        if got is None and isinstance(value, float) and value == value and abs(value) < 1e19:
            got = int(value)
        return got if got is not None and got >= 0 else None

    def span(self, start: Any, end: Any) -> tuple[float, float] | None:
        """(start us, duration us), or None for a bad or negative span."""
        a, b = self.ns(start), self.ns(end)
        if a is None or b is None or b < a or b - a > 10**16:
            return None
        if self.base is None:
            self.base = a
        return (a - self.base) / 1000, (b - a) / 1000


def column(columns: list[str], name: str, expr: str | None = None) -> str:
    """``expr`` (default ``t.<name>``) when the table has ``name``, else NULL."""
    return (expr or f"t.{name}") if name in columns else "NULL"


def _text(value: Any) -> str:
    return value[:MAX_TEXT] if isinstance(value, str) else ""


def named(db: Db, columns: list[str]) -> list[str]:
    """``columns`` whose ids STRING_IDS can name: none when the file has no STRING_IDS."""
    return columns if db.table("STRING_IDS") is not None else []


def _string(columns: list[str], name: str, alias: str) -> tuple[str, str]:
    """(select expression, join) of the STRING_IDS value of id column ``name``."""
    if name not in columns:
        return "NULL", ""
    return (
        f"substr({alias}.value, 1, {MAX_TEXT})",
        f"LEFT JOIN STRING_IDS {alias} ON {alias}.id = t.{name}",
    )


def _steps(db: Db, tl: Timeline, clock: DbClock) -> None:
    if db.table("STEP_TIME") is None:
        return
    for step, start, end in db.rows("SELECT id, startNs, endNs FROM STEP_TIME", cap=1_000_000):
        n, got = integer(step), clock.span(start, end)
        if n is not None and got is not None:
            tl.steps.append(Step(n, got[0], got[0] + got[1]))


def _stacks(db: Db) -> dict[int, str]:
    if db.table("PYTORCH_CALLCHAINS") is None or db.table("STRING_IDS") is None:
        return {}
    frames: dict[int, list[str]] = {}
    sql = (
        "SELECT t.id, substr(s.value, 1, 1024) FROM PYTORCH_CALLCHAINS t "
        "LEFT JOIN STRING_IDS s ON s.id = t.stack ORDER BY t.id, t.stackDepth"
    )
    for key, frame in db.rows(sql, cap=5_000_000):
        if isinstance(key, int) and isinstance(frame, str):
            got = frames.setdefault(key, [])
            if len(got) < 128:
                got.append(frame.replace("\r", "").replace("\n", "").strip())
    return {k: ";".join(v)[:MAX_TEXT] for k, v in frames.items()}


def _framework(db: Db, tl: Timeline, clock: DbClock, host: HostSide) -> None:
    found = db.table("PYTORCH_API")
    if found is None:
        return
    columns = found[1]
    name, j1 = _string(named(db, columns), "name", "n")
    shapes, j2 = _string(named(db, columns), "inputShapes", "s")
    dtypes, j3 = _string(named(db, columns), "inputDtypes", "d")
    sql = (
        f"SELECT t.startNs, t.endNs, t.globalTid, {column(columns, 'type')}, {name}, {shapes}, "
        f"{dtypes}, {column(columns, 'callchainId')} FROM PYTORCH_API t {j1} {j2} {j3}"
    )
    stacks = _stacks(db)
    queue = False
    for start, end, gtid, kind, op, shape, dtype, chain in db.rows(sql, cap=MAX_ROWS):
        got = clock.span(start, end)
        tid = (integer(gtid) or 0) & 0xFFFFFFFF
        if got is None or not isinstance(op, str):
            host.bad_events += 1
            continue
        role = API_TYPES.get(integer(kind) or 50001, "op")
        if role == "trace":
            tl.frames.append(start=got[0], dur=got[1], tid=tid, name=op[:MAX_TEXT])
            continue
        queue = queue or role == "queue"
        args = {
            "Call stack": stacks.get(integer(chain) if chain is not None else -1, ""),  # type: ignore[arg-type]
            "Input Dims": _text(shape).replace("\r", "").replace("\n", ""),
            "Input type": _text(dtype).replace("\r", "").replace("\n", ""),
        }
        host.host_event({"name": op, "args": args}, got[0], got[1], tid)
    if len(tl.host_ops):  # enqueue/dequeue records: TASK_QUEUE_ENABLE is on
        tl.facts["task_queue"] = queue


def _cann(db: Db, tl: Timeline, clock: DbClock, host: HostSide) -> None:
    found = db.table("CANN_API")
    if found is None:
        return
    name, join = _string(named(db, found[1]), "name", "n")
    sql = f"SELECT t.startNs, t.endNs, t.type, t.globalTid, t.connectionId, {name} FROM CANN_API t {join}"
    for start, end, level, gtid, conn, api in db.rows(sql, cap=MAX_ROWS):
        got = clock.span(start, end)
        if got is None or not isinstance(api, str):
            host.bad_events += 1
            continue
        tid = (integer(gtid) or 0) & 0xFFFFFFFF
        label = CANN_LEVELS.get(integer(level) or 0, "Api")
        host.host_event({"name": f"{label}@{api}"}, got[0], got[1], tid)
        key = integer(conn)
        if integer(level) == NODE_LEVEL and key is not None and key >= 0:
            tl.launches.setdefault(key, (tid, got[0]))


def _launches(db: Db, tl: Timeline, clock: DbClock) -> None:
    """Tasks' connection ids -> the framework op that launched them (its thread and start)."""
    found, ids = db.table("PYTORCH_API"), db.table("CONNECTION_IDS")
    if found is None or ids is None or "connectionId" not in found[1]:
        return
    kind = "AND (p.type = 50001 OR p.type IS NULL)" if "type" in found[1] else ""
    sql = (
        "SELECT c.connectionId, p.startNs, p.globalTid FROM CONNECTION_IDS c "
        f"JOIN PYTORCH_API p ON p.connectionId = c.id WHERE c.connectionId < ? {kind}"
    )
    framework: dict[int, tuple[int, float]] = {}
    for conn, start, gtid in db.rows(sql, (FRAMEWORK_CONNECTION,), cap=MAX_ROWS):
        key, got = integer(conn), clock.span(start, start)
        if key is None or got is None:
            continue
        prev = framework.get(key)
        if prev is None or prev[1] < got[0]:  # nested ops: the innermost (latest) holds the launch
            framework[key] = ((integer(gtid) or 0) & 0xFFFFFFFF, got[0])
    tl.launches.update(framework)  # a framework op wins over the CANN call it made


def read_host(db: Db, tl: Timeline, clock: DbClock) -> None:
    """Steps, framework ops, frames, CANN calls and launches of ``db`` into ``tl``."""
    host = HostSide(tl)
    _steps(db, tl, clock)  # STEP_TIME and the ProfilerStep#N ops agree; finish() keeps one per id
    _framework(db, tl, clock, host)
    _cann(db, tl, clock, host)
    _launches(db, tl, clock)
    host.finish()
