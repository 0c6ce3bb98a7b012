"""The CSV files of ``ASCEND_PROFILER_OUTPUT`` -> Timeline.

* ``kernel_details.csv``: one row per device task (Step Id, Stream ID, Name, Type, OP State,
  Accelerator Core, Start Time(us), Duration(us), Input Shapes, Input Data Types, ...).
  With a trace_view.json read first, each row enriches the task it matches (same stream and
  start time, to the nanosecond) with its type, core, shapes, dtypes and step; rows no task
  matches (or every row, without a timeline) are added as device ops. Exact duplicate rows
  (the same stream, start and name) are counted once. A collective's row (Accelerator Core
  ``COMMUNICATION``, stream N/A: CANN's op summary lists each HCCL op once) is matched to the
  timeline's collective of the same name and start, so it never counts twice; it is core
  ``HCCL`` like the trace's.
* ``step_trace_time.csv``: the profiler's own step breakdown, kept as rows of floats.
* ``op_statistic.csv``: device time per op type and core (used when no kernel list exists).
* ``operator_details.csv``: framework ops with their device time and call stacks.

Column names have changed across torch_npu releases ("Accelerator Core" was "Task Type",
times were "(us)"-less); each column is looked up under its known spellings, and a file
that lacks one the reading needs is skipped with a note, never guessed.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

from migrate.perf.read.ascend_names import core_of, op_type
from migrate.perf.read.chrome import Clock, integer, number
from migrate.perf.read.jsonstream import TraceError, open_bounded
from migrate.perf.timeline import Timeline

__all__ = ["read_kernel_details", "read_op_statistic", "read_operator_details", "read_step_trace_time"]

MAX_CSV_BYTES = 16 << 30
MAX_LINE = 32 << 20  # characters: a row of kernel_details.csv is a few hundred
csv.field_size_limit(16 << 20)

COLUMNS = {
    "step": ("Step Id", "Step ID", "Step"),
    "stream": ("Stream ID", "Stream Id"),
    "name": ("Name", "Op Name", "OP Name"),
    "type": ("Type", "OP Type", "Op Type"),
    "state": ("OP State",),
    "core": ("Accelerator Core", "Task Type", "Core Type"),
    "start": ("Start Time(us)", "Task Start Time(us)", "Start Time"),
    "dur": ("Duration(us)", "Task Duration(us)", "Duration"),
    "shapes": ("Input Shapes",),
    "dtypes": ("Input Data Types",),
}


def _lines(text: io.TextIOWrapper) -> Iterator[str]:
    """The file's lines, NUL bytes dropped; a line longer than ``MAX_LINE`` characters is a
    TraceError (it is never read whole)."""
    number = 0
    while line := text.readline(MAX_LINE):
        number += 1
        if len(line) >= MAX_LINE and not line.endswith("\n"):
            raise TraceError(f"line {number} is longer than {MAX_LINE} characters")
        yield line.replace("\0", "")


def rows(path: Path) -> Iterator[dict[str, str]]:
    """The rows of a CSV file as dicts (BOM and NUL bytes tolerated, bad UTF-8 replaced),
    bounded: the file's size, a line's length, a field's size."""
    raw, stream = open_bounded(path, MAX_CSV_BYTES)
    try:
        buffered = io.BufferedReader(stream)  # type: ignore[type-var]
        text = io.TextIOWrapper(buffered, encoding="utf-8-sig", errors="replace", newline="")
        reader = csv.DictReader(_lines(text))
        try:
            for row in reader:
                yield {
                    k.strip(): (v or "") for k, v in row.items() if isinstance(k, str) and isinstance(v, str)
                }
        except csv.Error as exc:
            raise TraceError(f"line {reader.line_num}: {exc}") from None
    finally:
        raw.close()


def _column(header: dict[str, str], role: str) -> str | None:
    return next((c for c in COLUMNS[role] if c in header), None)


def _columns(
    first: dict[str, str], needed: tuple[str, ...], optional: tuple[str, ...]
) -> dict[str, str] | None:
    found = {role: _column(first, role) for role in (*needed, *optional)}
    if any(found[role] is None for role in needed):
        return None
    return {role: col for role, col in found.items() if col is not None}


def _clean(value: str) -> str:
    return value.strip().strip('"').strip()


def read_kernel_details(path: Path, tl: Timeline, clock: Clock) -> None:
    """Add kernel_details.csv to ``tl`` (see the module doc)."""
    ops, strings = tl.device_ops, tl.strings
    by_key = {
        (ops.cols["stream"][i], round(ops.cols["start"][i] * 1000)): i for i in range(len(ops))
    }  # the timeline's tasks
    hccl = strings.id("HCCL")
    by_name = {  # the timeline's collectives, by name and start
        (strings[ops.cols["name"][i]], round(ops.cols["start"][i] * 1000)): i
        for i in range(len(ops))
        if ops.cols["core"][i] == hccl
    }
    seen: set[tuple[int, int, str]] = set()
    cols: dict[str, str] | None = None
    added = duplicates = 0
    for row in rows(path):
        if cols is None:
            cols = _columns(
                row, ("name", "start", "dur"), ("step", "stream", "type", "state", "core", "shapes", "dtypes")
            )
            if cols is None:
                tl.note("kernel_details.csv lacks Name, Start Time(us) or Duration(us): not read")
                return
        values = {role: _clean(row.get(col, "")) for role, col in cols.items()}
        start, dur = clock.us(values["start"]), number(values["dur"])
        if start is None or dur is None or dur < 0:
            continue
        stream = integer(values.get("stream", "")) or 0
        key = (stream, round(start * 1000))
        if (*key, values["name"]) in seen:
            duplicates += 1
            continue
        seen.add((*key, values["name"]))
        if core_of(values.get("core", ""), values["name"]) == "HCCL":
            added += _merge_collective(tl, by_name.get((values["name"], key[1])), values, start, dur)
        else:
            added += _merge(tl, by_key.get(key), values, start, dur, stream)
    if duplicates:
        tl.note(
            f"kernel_details.csv: {duplicates} duplicate row(s) (same stream, start and name) counted once"
        )
    if cols is not None and "state" not in cols:
        tl.note("kernel_details.csv has no OP State column: static or dynamic shapes are not known from it")


def _merge(
    tl: Timeline, index: int | None, values: dict[str, str], start: float, dur: float, stream: int
) -> int:
    name = values["name"]
    core = core_of(values.get("core", ""), name)
    kind = values.get("type") or op_type(name)
    step = integer(values.get("step", ""))
    strings, cols = tl.strings, tl.device_ops.cols
    if index is not None:
        cols["type"][index] = strings.id(kind)
        cols["core"][index] = strings.id(core)
        cols["shapes"][index] = strings.id(values.get("shapes", ""))
        cols["dtypes"][index] = strings.id(values.get("dtypes", ""))
        cols["state"][index] = strings.id(values.get("state", ""))
        cols["step"][index] = -1 if step is None else step
        return 0
    tl.device = "npu"
    tl.device_ops.append(
        start=start,
        dur=dur,
        stream=stream,
        launch=-1,
        step=-1 if step is None else step,
        name=name,
        type=kind,
        core=core,
        shapes=values.get("shapes", ""),
        dtypes=values.get("dtypes", ""),
        state=values.get("state", ""),
    )
    return 1


def _merge_collective(
    tl: Timeline, index: int | None, values: dict[str, str], start: float, dur: float
) -> int:
    """A collective's row (core COMMUNICATION): the timeline's collective of that name and
    start when there is one (its step noted), else a collective of its own."""
    step = integer(values.get("step", ""))
    if index is not None:
        tl.device_ops.cols["step"][index] = -1 if step is None else step
        return 0
    tl.device = "npu"
    name = values["name"]
    tl.device_ops.append(
        start=start,
        dur=dur,
        launch=-1,
        step=-1 if step is None else step,
        name=name,
        type=op_type(name) if name.startswith("hcom_") else values.get("type") or name,
        core="HCCL",
    )
    return 1


STEP_TRACE_COLUMNS = {
    "computing": "Computing",
    "communication_not_overlapped": "Communication(Not Overlapped)",
    "overlapped": "Overlapped",
    "communication": "Communication",
    "free": "Free",
    "stage": "Stage",
    "bubble": "Bubble",
    "preparing": "Preparing",
}


def read_step_trace_time(path: Path, tl: Timeline) -> None:
    """step_trace_time.csv -> ``tl.tables["step_trace_time"]``: one dict per row with the
    step id (int or None), the device id and the figures in microseconds."""
    out = []
    for row in rows(path):
        got: dict[str, float | int | None] = {
            "step": integer(_clean(row.get("Step", ""))),
            "device": integer(_clean(row.get("Device_id", ""))),
        }
        for key, col in STEP_TRACE_COLUMNS.items():
            got[key] = number(_clean(row.get(col, ""))) if col in row else None
        if got["computing"] is None or got["free"] is None:
            continue
        out.append(got)
    if out:
        tl.tables["step_trace_time"] = out
        tl.device = "npu"


def read_op_statistic(path: Path, tl: Timeline) -> None:
    """op_statistic.csv -> ``tl.tables["op_statistic"]``: (type, core, count, total us)."""
    out = []
    for row in rows(path):
        kind = _clean(row.get("OP Type", row.get("Op Type", "")))
        total = number(_clean(row.get("Total Time(us)", "")))
        count = integer(_clean(row.get("Count", ""))) or 0
        if kind and total is not None and total >= 0:
            out.append((kind, _clean(row.get("Core Type", "")), count, total))
    if out:
        tl.tables["op_statistic"] = out


def read_operator_details(path: Path, tl: Timeline) -> None:
    """operator_details.csv -> ``tl.tables["operator_details"]``: (name, shapes, stack,
    device self us, host self us) per framework op call."""
    out = []
    for row in rows(path):
        name = _clean(row.get("Name", ""))
        device = number(_clean(row.get("Device Self Duration(us)", "")))
        host = number(_clean(row.get("Host Self Duration(us)", "")))
        if name:
            out.append(
                (
                    name,
                    _clean(row.get("Input Shapes", "")),
                    row.get("Call Stack", ""),
                    device or 0.0,
                    host or 0.0,
                )
            )
        if len(out) >= 5_000_000:
            tl.note("operator_details.csv: only the first 5,000,000 rows were read")
            break
    if out:
        tl.tables["operator_details"] = out
