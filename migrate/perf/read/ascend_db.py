"""The SQLite export of an Ascend PyTorch Profiler result -> Timeline.

torch_npu (``export_type=db``; prof_view/prof_db_parse/) writes, in ASCEND_PROFILER_OUTPUT,
``ascend_pytorch_profiler.db`` (``ascend_pytorch_profiler_{rank}.db`` in a distributed run):
CANN's ``msprof_*.db`` (its tables: CANN's .db reference, "Profile Data File Reference
(DB)") moved in, plus the framework's tables (TableColumnsManager in prof_common_func/
_constant.py); and ``analysis.db`` beside it with the analyses. msprof's own
``msprof_{timestamp}.db`` has the CANN tables alone. Every id column names a row of
``STRING_IDS(id, value)``; times are integer nanoseconds (``startNs``, ``endNs``, stored as
INTEGER or TEXT), read relative to the first one seen.

Tables read, and what each gives the Timeline (ascend_db_host.py, ascend_db_device.py):

* ``META_DATA(name, value)``: ``ENV_VARIABLES`` (a JSON object) -> ``environment``; the
  other rows are profiler_metadata.json's members (JSON values): CANN and torch_npu versions;
* ``NPU_INFO(id, name)`` -> ``chip``; ``RANK_DEVICE_MAP(rankId, deviceId)`` -> ``rank`` (-1: none);
* ``STEP_TIME(id, startNs, endNs)`` -> ``steps`` (else the ``ProfilerStep#N`` host ops);
* ``PYTORCH_API(startNs, endNs, globalTid, connectionId, name, inputDtypes, inputShapes,
  callchainId, type)`` with ``type`` an ``ENUM_API_TYPE`` id: 50001 op -> ``host_ops`` (thread
  = low 32 bits of ``globalTid``; shapes, dtypes; the stack from ``PYTORCH_CALLCHAINS(id,
  stack, stackDepth)``, innermost first), 50002 queue (Enqueue / Dequeue) -> host ops and
  ``facts["task_queue"]``, 50003 trace -> ``frames``, 50004 mstx -> host ops;
* ``CANN_API(startNs, endNs, type, globalTid, connectionId, name)`` -> host ops named
  ``<level>@<name>`` as the trace names them (AscendCL@, Runtime@, Node@, Model@,
  Communication@);
* launches: ``CONNECTION_IDS(id, connectionId)`` ties a framework op (its ``connectionId``
  is an ``id`` here) to the connection ids of the tasks it launched; a task whose connection
  no framework op holds is tied to the ``node``-level CANN_API call of that connection;
* ``TASK`` joined with ``COMPUTE_TASK_INFO(name, globalTaskId, taskType, opType,
  inputShapes, inputDataTypes, opState)`` -> device ops (``taskType`` is the Accelerator Core;
  ``TASK.streamId``, ``connectionId``; ``opState`` only where CANN wrote it). Task types CANN's
  op summary leaves out (WRITE_BACK, INVALID, HCCL_AI_CPU, and COMMUNICATION kernels of a
  collective) are left out too; tasks of a device other than the rank's one are noted;
* ``COMMUNICATION_OP(opName, startNs, endNs, groupName, opId, dataType, count, opType)`` ->
  device ops of core HCCL (bytes = ``count`` x the size of ``ENUM_HCCL_DATA_TYPE`` name), and
  with ``COMMUNICATION_TASK_INFO(globalTaskId, taskType, opId, transportType, linkType, size)``
  (``ENUM_HCCL_TRANSPORT_TYPE``, ``ENUM_HCCL_LINK_TYPE``) -> ``tables["communication"]``
  (read/ascend_hccl.py), unless analysis.db has its own analysis;
* ``OVERLAP_ANALYSIS(startNs, endNs, type, deviceId)`` (``ENUM_OVERLAP_ANALYSIS_TYPE``: COMPUTE,
  COMMUNICATION, COMM_NOT_OVERLAP_COMP, FREE) -> ``overlap``, as the trace's tracks;
* analysis.db ``StepTraceTime`` (the columns of step_trace_time.csv, microseconds) ->
  ``tables["step_trace_time"]``; ``CommAnalyzerTime`` / ``CommAnalyzerBandwidth`` (one row per
  collective, transport and package size: ``package_size`` MB, ``count``, ``total_duration``
  ms, the transport's ``transit_size`` / ``transit_time`` repeated on each) /
  ``CommAnalyzerMatrix`` -> ``tables["communication"]`` and ``tables["communication_matrix"]``
  in the shapes communication.json and communication_matrix.json give.

A table or column an older writer lacks is skipped (the note says what that leaves out).
Every query has a row cap; the file is opened read-only and untrusted (sqlite_ro.py): a
file that is not SQLite, or is corrupt, is a TraceError naming it.
"""

from __future__ import annotations

import json
from pathlib import Path

from migrate.perf.read.ascend_db_device import read_analysis_db, read_device
from migrate.perf.read.ascend_db_host import DbClock, read_host
from migrate.perf.read.discover import Source
from migrate.perf.read.jsonstream import TraceError
from migrate.perf.read.sqlite_ro import Db, open_db
from migrate.perf.timeline import Timeline

__all__ = ["NEEDS", "read_ascend_db"]

# The columns each table must have to be read (the others are optional: ascend_db_*.py).
NEEDS: dict[str, tuple[str, ...]] = {
    "STRING_IDS": ("id", "value"),
    "META_DATA": ("name", "value"),
    "NPU_INFO": ("name",),
    "RANK_DEVICE_MAP": ("rankId",),
    "STEP_TIME": ("id", "startNs", "endNs"),
    "PYTORCH_API": ("startNs", "endNs", "globalTid"),
    "PYTORCH_CALLCHAINS": ("id", "stack", "stackDepth"),
    "CONNECTION_IDS": ("id", "connectionId"),
    "CANN_API": ("startNs", "endNs", "type", "globalTid", "connectionId"),
    "TASK": ("startNs", "endNs", "globalTaskId"),
    "COMPUTE_TASK_INFO": ("globalTaskId",),
    "COMMUNICATION_OP": ("startNs", "endNs"),
    "COMMUNICATION_TASK_INFO": ("globalTaskId", "opId"),
    "OVERLAP_ANALYSIS": ("startNs", "endNs", "type"),
    "ENUM_HCCL_DATA_TYPE": ("id", "name"),
    "ENUM_HCCL_LINK_TYPE": ("id", "name"),
    "ENUM_HCCL_TRANSPORT_TYPE": ("id", "name"),
    "ENUM_OVERLAP_ANALYSIS_TYPE": ("id", "name"),
    "CommAnalyzerTime": (
        "hccl_op_name",
        "group_name",
        "start_timestamp",
        "elapse_time",
        "transit_time",
        "wait_time",
        "synchronization_time",
        "idle_time",
    ),
    "CommAnalyzerBandwidth": (
        "hccl_op_name",
        "group_name",
        "transport_type",
        "transit_size",
        "transit_time",
        "package_size",
        "count",
        "total_duration",
    ),
    "CommAnalyzerMatrix": (
        "hccl_op_name",
        "group_name",
        "src_rank",
        "dst_rank",
        "transport_type",
        "transit_size",
        "transit_time",
    ),
}


def _json(value: object) -> object:
    if not isinstance(value, str) or len(value) > 1 << 20:
        return None
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value


def _metadata(db: Db, tl: Timeline) -> None:
    if db.table("META_DATA") is None:
        return
    for name, value in db.rows("SELECT name, substr(value, 1, 1048576) FROM META_DATA", cap=10_000):
        if not isinstance(name, str):
            continue
        got = _json(value)
        if name == "ENV_VARIABLES" and isinstance(got, dict):
            tl.environment.update({str(k)[:128]: str(v)[:512] for k, v in list(got.items())[:256]})
        elif name in ("CANN_VERSION", "cann_version", "torch_npu_version", "torch_version"):
            if isinstance(got, str):
                tl.facts[name.lower()] = got[:64]


def _identity(db: Db, tl: Timeline) -> None:
    if db.table("NPU_INFO") is not None:
        for (name,) in db.rows("SELECT substr(name, 1, 128) FROM NPU_INFO", cap=64):
            if isinstance(name, str) and name and name != "N/A":
                tl.chip = name
                break
    if tl.rank is None and db.table("RANK_DEVICE_MAP") is not None:
        for (rank,) in db.rows("SELECT rankId FROM RANK_DEVICE_MAP", cap=64):
            if isinstance(rank, int) and 0 <= rank < 1 << 20:
                tl.rank = rank
                break


def _schema_notes(db: Db, tl: Timeline, name: str) -> None:
    if db.refused:
        tl.note(f"{name}: {', '.join(db.refused[:5])} not plain tables: not read")
    if db.lacking:
        tl.note(f"{name}: {'; '.join(db.lacking[:5])}: not read")
    if db.capped:
        tl.note(f"{name}: only the first rows of {', '.join(dict.fromkeys(db.capped[:5]))} were read")


def _analysis_path(src: Source) -> Path | None:
    given = src.files.get("analysis_db")
    if given is not None:
        return given
    sibling = Path(src.files["db"]).with_name("analysis.db")
    return sibling if sibling.is_file() and sibling != Path(src.files["db"]) else None


def read_ascend_db(src: Source, progress=None) -> Timeline:
    """The Timeline of the .db export ``src`` (TraceError names the file that failed).
    ``progress`` is accepted for the readers' common signature; a query reports none."""
    path = Path(src.files["db"])
    tl = Timeline(str(src.path), "ascend", device="npu", rank=src.rank)
    clock = DbClock()
    try:
        with open_db(path, NEEDS) as db:
            _metadata(db, tl)
            _identity(db, tl)
            read_host(db, tl, clock)
            read_device(db, tl, clock, path.name)
            _schema_notes(db, tl, path.name)
    except TraceError as exc:
        raise TraceError(f"{path.name}: {exc}") from None
    tl.files.append(path.name)
    analysis = _analysis_path(src)
    if analysis is not None:
        try:
            with open_db(analysis, NEEDS) as db:
                read_analysis_db(db, tl)
                _schema_notes(db, tl, analysis.name)
        except TraceError as exc:
            raise TraceError(f"{analysis.name}: {exc}") from None
        tl.files.append(analysis.name)
    if not len(tl.device_ops) and not len(tl.host_ops):
        tl.note(f"{path.name} holds no tasks and no framework ops (TASK, PYTORCH_API)")
    return tl
