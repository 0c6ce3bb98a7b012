"""Ascend PyTorch Profiler ``trace_view.json`` -> Timeline.

The file is a Chrome trace whose processes say what they hold (``process_name``):

* ``Python`` (or any process labelled CPU that is not ``CANN``): framework ops
  (``cpu_op``: aten ops, ProfilerStep#N, Optimizer.step#...), Python frames, the task
  queue's ``enqueue`` / ``dequeue``;
* ``CANN``: ACL calls (``AscendCL@aclrtSynchronizeStream``, ``AscendCL@opCompile``, ...),
  kept as host ops under their own names;
* ``Ascend Hardware``: the tasks each stream ran (threads are streams), with
  ``args["Task Type"]`` (AI_CORE, AI_VECTOR_CORE, AI_CPU, MIX_AIC, ...; older CANN writes
  ``Other``, and the kernel name then tells AiCpu from AiCore);
* ``HCCL`` / ``Communication``: collectives (``hcom_allReduce_...``) and their tasks;
* ``Overlap Analysis``: the profiler's Computing / Communication / Communication(Not
  Overlapped) / Free tracks, which give the step breakdown exactly as torch_npu's
  step_trace_time.csv computes it.

The ``async_npu`` flows (``torch_to_npu``: start at the launching host op, end at the task)
tie each task to its launch; they are matched by stream and the task's timestamp.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from migrate.perf.read import jsonstream
from migrate.perf.read.chrome import Clock, HostSide, args_of, integer, number, text, times
from migrate.perf.timeline import Timeline

__all__ = ["op_type", "read_trace_view"]

OVERLAP_KINDS = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")
CORES = {"AI_CORE", "AI_VECTOR_CORE", "AI_CPU", "MIX_AIC", "MIX_AIV", "HCCL", "DSA", "COMMUNICATION", "SDMA"}
_NODE_INDEX = re.compile(r"(.*?[A-Za-z])(\d+)$")
# The data type names HCCL ops carry in their args, and their sizes.
HCCL_DTYPE_BYTES = {
    "INT8": 1,
    "UINT8": 1,
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
}


def op_type(name: str) -> str:
    """The op type of an Ascend task name: ``aclnnMm_MatMulCommon_MatMulV2`` -> MatMulV2,
    ``trans_TransData_8`` -> TransData, ``hcom_allReduce__184_0_1`` -> hcom_allReduce, a
    graph node ``Conv2DBackpropFilter6`` -> Conv2DBackpropFilter (the node's index
    dropped), anything else as it is."""
    if name.startswith("hcom_"):
        return "hcom_" + name[5:].split("_", 1)[0]
    if name.startswith("aclnn") and "_" in name:
        return name.rsplit("_", 1)[-1] or name
    if name.startswith("trans_"):
        parts = name.split("_")
        return parts[1] if len(parts) > 1 and parts[1] else name
    base = re.sub(r"_\d+$", "", name)
    m = _NODE_INDEX.fullmatch(base)
    return m.group(1) if m and not base.endswith(("V1", "V2", "V3", "V4", "V5")) else base


def core_of(task_type: str, name: str) -> str:
    if name.startswith("hcom_"):
        return "HCCL"
    if task_type in CORES:
        return task_type
    if "AiCpu" in name or "AICPU" in name:
        return "AI_CPU"
    if "AiCore" in name:
        return "AI_CORE"
    return task_type or "OTHER"


class _TraceView:
    def __init__(self, tl: Timeline, clock: Clock | None) -> None:
        self.tl = tl
        self.host = HostSide(tl, clock)
        self.flow_ends: dict[tuple[int, int], int] = {}  # (stream, ts ns) -> flow id
        self.pending: list[dict] = []  # events seen before their process was named
        self.task_queue = False

    def role(self, pid: Any) -> str:
        name = self.host.process_names.get(pid, "")
        if name == "Ascend Hardware":
            return "device"
        if name in ("HCCL", "Communication"):
            return "comm"
        if name == "Overlap Analysis":
            return "overlap"
        if name == "CANN":
            return "cann"
        if name:
            label = self.host.process_labels.get(pid, "")
            return "host" if not label.startswith("NPU") else "other"
        return ""

    def event(self, event: dict) -> None:
        ph = event.get("ph")
        if ph == "M":
            self.host.meta_event(event)
            return
        role = self.role(event.get("pid"))
        if not role:
            if len(self.pending) < 1_000_000:
                self.pending.append(event)
            return
        if ph == "X":
            self._complete(event, role)
        elif ph in ("s", "f") and event.get("cat") == "async_npu":
            self._flow(event, ph)

    def _flow(self, event: dict, ph: str) -> None:
        fid = integer(event.get("id"))
        tid = integer(event.get("tid"))
        key = self.host.clock.key(event.get("ts"))
        if fid is None or tid is None or key is None:
            return
        if ph == "s":
            self.tl.launches[fid] = (tid, key / 1000)
        else:
            self.flow_ends[(tid, key)] = fid

    def _complete(self, event: dict, role: str) -> None:
        got = times(event, self.host.clock)
        if got is None:
            self.host.bad_events += 1
            return
        start, dur = got
        tid = integer(event.get("tid"))
        tid = 0 if tid is None else tid
        if role == "overlap":
            name = event.get("name")
            if name in OVERLAP_KINDS:
                self.tl.overlap.append(start=start, dur=dur, kind=name)
        elif role in ("device", "comm"):
            self._device(event, role, start, dur, tid)
        elif role in ("host", "cann"):
            self.task_queue = self.task_queue or event.get("cat") in ("enqueue", "dequeue")
            self.host.host_event(event, start, dur, tid)

    def _device(self, event: dict, role: str, start: float, dur: float, tid: int) -> None:
        name = text(event.get("name"))
        args = args_of(event)
        if role == "comm" and not name.startswith("hcom_"):
            return  # the tasks of a collective (Notify Wait, Memcpy...) inside it
        core = "HCCL" if role == "comm" else core_of(text(args.get("Task Type")), name)
        self.tl.device = "npu"
        self.tl.device_ops.append(
            start=start,
            dur=dur,
            bytes=_hccl_bytes(args) if core == "HCCL" else 0.0,
            stream=tid,
            launch=self.flow_ends.get((tid, round(start * 1000)), -1) if role == "device" else -1,
            name=name,
            type=op_type(name),
            core=core,
            group=text(args.get("group_name") or args.get("Group Name")) if core == "HCCL" else "",
        )

    def finish(self) -> None:
        pending, self.pending = self.pending, []
        for event in pending:  # events written before their process's name
            if self.role(event.get("pid")):
                self.event(event)
        self._late_flows()
        self.host.finish()

    def _late_flows(self) -> None:
        """Tie tasks read before their flow's end to their launch."""
        ops = self.tl.device_ops.cols
        for i in range(len(self.tl.device_ops)):
            if ops["launch"][i] == -1:
                fid = self.flow_ends.get((ops["stream"][i], round(ops["start"][i] * 1000)))
                if fid is not None:
                    ops["launch"][i] = fid


def _hccl_bytes(args: dict) -> float:
    size = number(args.get("size(Byte)"))
    if size is not None and size >= 0:
        return size
    count = integer(args.get("count"))
    width = HCCL_DTYPE_BYTES.get(str(args.get("data_type", "")).upper(), 0)
    return float(max(count or 0, 0) * width)


def read_trace_view(path: Path, tl: Timeline, progress=None, clock: Clock | None = None) -> None:
    """Add ``trace_view.json`` at ``path`` to ``tl`` (TraceError if it cannot be read)."""
    reader = _TraceView(tl, clock)
    counts: dict[str, int] = {}
    for kind, value in jsonstream.items(path, progress, counts):
        if kind == "event":
            reader.event(value)
    reader.finish()
    if counts.get("skipped"):
        tl.note(f"trace_view.json: {counts['skipped']} entries were not events and were skipped")
    if reader.task_queue:
        tl.facts["task_queue"] = True  # enqueue/dequeue events: TASK_QUEUE_ENABLE is on
