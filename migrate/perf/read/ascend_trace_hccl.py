"""The ``HCCL`` / ``Communication`` process of an Ascend ``trace_view.json`` -> collectives.

CANN's timeline writer (msprof hccl_assembler) lays the process out as, per communication
group, a thread ``Group <group> Communication`` holding the collectives (``hcom_allReduce_...``,
args ``count``, ``data_type``, ``alg_type``, ``rank_size``, ...) followed by threads ``Plane
<n>`` holding the group's tasks (``Memcpy``, ``Reduce_Inline``, ``Notify_Wait``, ``RDMASend``
..., args ``transport type``, ``link type``, ``size(Byte)``, ``stream id``); a group without a
name has a thread named ``Communication``. So an op is an event of a thread whose name holds
"Communication" (an event named ``hcom_*`` on a thread the file has not named), a task is an
event of a plane, and a plane belongs to the nearest group thread before it. Each task is
counted in the op of its group whose time holds its start.

The ops become device ops (core ``HCCL``, bytes = ``count`` x the size of ``data_type``, the
group); the ops with their tasks become ``tables["communication"]`` (ascend_hccl.py); the
streams the tasks ran on (``stream id``) are handed back, so that the same tasks, which the
``Ascend Hardware`` process shows again on those streams, are not counted as computation.
"""

from __future__ import annotations

import bisect
from array import array
from collections import defaultdict
from typing import Any

from migrate.perf.read.ascend_hccl import Collectives
from migrate.perf.read.ascend_names import op_type
from migrate.perf.read.chrome import args_of, integer, number, text
from migrate.perf.timeline import Timeline

__all__ = ["HCCL_DTYPE_BYTES", "HcclProcess", "op_bytes"]

# ENUM_HCCL_DATA_TYPE names (msprof .db reference) and their sizes in bytes.
HCCL_DTYPE_BYTES = {
    "INT8": 1,
    "UINT8": 1,
    "HIF8": 1,
    "FP8E4M3": 1,
    "FP8E5M2": 1,
    "FP8E8M0": 1,
    "INT16": 2,
    "UINT16": 2,
    "FP16": 2,
    "BFP16": 2,
    "BF16": 2,
    "INT32": 4,
    "UINT32": 4,
    "FP32": 4,
    "INT64": 8,
    "UINT64": 8,
    "FP64": 8,
    "INT128": 16,
}
MAX_TASKS = 20_000_000
MAX_OPS = 2_000_000


def op_bytes(count: Any, data_type: Any) -> float:
    """What a collective moves per rank: its element ``count`` times its dtype's size (0
    when either is unknown)."""
    n = integer(count)
    width = HCCL_DTYPE_BYTES.get(str(data_type or "").upper().removeprefix("HCCL_DATA_TYPE_"), 0)
    return float(max(n or 0, 0) * width)


def _group_of(thread: str) -> str:
    name = thread.strip()
    if name.startswith("Group ") and name.endswith(" Communication"):
        return name[len("Group ") : -len(" Communication")].strip()
    return ""


class HcclProcess:
    """Collects the process's events while the trace streams; :meth:`finish` adds them."""

    def __init__(self, tl: Timeline) -> None:
        self.tl = tl
        self.threads: dict[int, str] = {}
        self.ops: list[tuple[int, float, float, str, float]] = []  # tid, start, dur, name, bytes
        self.tasks = {k: array("d") for k in ("start", "dur", "size")}
        self.task_ints = {k: array("q") for k in ("tid", "name", "transport", "link")}
        self.names: dict[str, int] = {}
        self.streams: set[int] = set()
        self.dropped = 0

    def thread(self, tid: int, name: str) -> None:
        if len(self.threads) < 100_000:
            self.threads[tid] = name[:256]

    def _code(self, value: Any) -> int:
        key = text(value)[:64]
        got = self.names.get(key)
        if got is None:
            if len(self.names) >= 10_000:
                return 0
            got = self.names[key] = len(self.names)
        return got

    def event(self, event: dict, start: float, dur: float, tid: int) -> None:
        name = text(event.get("name"))
        args = args_of(event)
        thread = self.threads.get(tid)
        is_op = "Communication" in thread if thread is not None else name.startswith("hcom_")
        if is_op:
            if len(self.ops) < MAX_OPS:
                self.ops.append((tid, start, dur, name, op_bytes(args.get("count"), args.get("data_type"))))
            else:
                self.dropped += 1
            return
        if len(self.tasks["start"]) >= MAX_TASKS:
            self.dropped += 1
            return
        stream = integer(args.get("stream id"))
        if stream is not None and len(self.streams) < 10_000:
            self.streams.add(stream)
        size = number(args.get("size(Byte)"))
        self.tasks["start"].append(start)
        self.tasks["dur"].append(dur)
        self.tasks["size"].append(size if size is not None and size >= 0 else 0.0)
        self.task_ints["tid"].append(tid)
        self.task_ints["name"].append(self._code(name))
        self.task_ints["transport"].append(self._code(args.get("transport type")))
        self.task_ints["link"].append(self._code(args.get("link type")))

    def finish_streams(self) -> set[int]:
        """The streams the tasks ran on, when there are collectives to stand for them."""
        return set(self.streams) if self.ops else set()

    def finish(self) -> None:
        """Add the ops as device ops and ``tables["communication"]``."""
        if not self.ops:
            if len(self.tasks["start"]):
                self.tl.note("trace_view.json: HCCL tasks without their collectives were not read")
            return
        ops = sorted(self.ops, key=lambda o: (o[0], o[1]))
        group_tids = sorted({op[0] for op in ops})
        collectives = Collectives()
        by_tid: dict[int, list[tuple[float, float, int]]] = defaultdict(list)
        for tid, start, dur, name, size in ops:
            group = _group_of(self.threads.get(tid, ""))
            self.tl.device_ops.append(
                start=start,
                dur=dur,
                bytes=size,
                launch=-1,
                name=name,
                type=op_type(name),
                core="HCCL",
                group=group,
            )
            index = collectives.add_op(name, group, start, dur)
            by_tid[tid].append((start, start + dur, index))
        self._tasks(collectives, group_tids, by_tid)
        if by_tid:
            self.tl.device = "npu"
            self.tl.tables["communication"] = collectives.table("trace_view.json")
        if self.dropped:
            self.tl.note(f"trace_view.json: {self.dropped} HCCL event(s) past the reading limits skipped")

    def _tasks(self, collectives: Collectives, group_tids: list[int], by_tid: dict) -> None:
        names = {code: name for name, code in self.names.items()}
        starts = {tid: [s for s, _, _ in spans] for tid, spans in by_tid.items()}
        t, ints = self.tasks, self.task_ints
        for k in range(len(t["start"])):
            g = bisect.bisect_right(group_tids, ints["tid"][k]) - 1
            if g < 0:
                continue
            tid = group_tids[g]
            spans, start = by_tid.get(tid), t["start"][k]
            if not spans:
                continue
            j = bisect.bisect_right(starts[tid], start) - 1
            if j < 0 or start > spans[j][1]:
                continue
            collectives.add_task(
                spans[j][2],
                names.get(ints["name"][k], ""),
                names.get(ints["transport"][k], ""),
                names.get(ints["link"][k], ""),
                t["size"][k],
                t["dur"][k],
            )
