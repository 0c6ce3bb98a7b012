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
* ``HCCL`` / ``Communication``: collectives (``hcom_allReduce_...``) and their tasks
  (ascend_trace_hccl.py: the collectives become device ops of core HCCL and
  ``tables["communication"]``; the streams their tasks ran on are communication streams);
* ``Overlap Analysis``: the profiler's Computing / Communication / Communication(Not
  Overlapped) / Free tracks, which give the step breakdown exactly as torch_npu's
  step_trace_time.csv computes it.

The Ascend Hardware process shows every task of every stream, the collectives' tasks again
among them: tasks on a communication stream are dropped (their collective stands for them;
counted in ``facts["communication_stream_tasks"]``), and so are event and notify waits and
records (a stream waiting, not computing: CANN's overlap analysis counts neither as
Computing; counted in ``facts["stream_waits"]``). ``facts["task_queue"]`` says whether the
framework's events hold the task queue's enqueue / dequeue (False: read, none seen). A
task's stream is its ``Physic Stream Id`` / ``Stream Id`` argument (the id kernel_details.csv
and the HCCL tasks use), else its thread.

The ``async_npu`` flows (``torch_to_npu``: start at the launching host op, end at the task)
tie each task to its launch; they are matched by stream and the task's timestamp.
"""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

from migrate.perf.read import jsonstream
from migrate.perf.read.ascend_names import core_of, is_wait, op_type
from migrate.perf.read.ascend_trace_hccl import HcclProcess
from migrate.perf.read.chrome import Clock, HostSide, args_of, integer, text, times
from migrate.perf.timeline import Timeline

__all__ = ["core_of", "op_type", "read_trace_view"]

OVERLAP_KINDS = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")
STREAM_ARGS = ("Physic Stream Id", "Stream Id", "stream id")


class _TraceView:
    def __init__(self, tl: Timeline, clock: Clock | None) -> None:
        self.tl = tl
        self.host = HostSide(tl, clock)
        self.hccl = HcclProcess(tl)
        self.hccl_pids: dict[Any, int] = {}
        self.threads: dict[tuple[Any, Any], str] = {}  # the HCCL process's thread names
        self.flow_ends: dict[tuple[int, int], int] = {}  # (thread, ts ns) -> flow id
        self.tids = array("q")  # the thread of each device op read here (flows use it)
        self.pending: list[dict] = []  # events seen before their process was named
        self.task_queue = False
        self.waits = 0

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
            self._meta(event)
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

    def _meta(self, event: dict) -> None:
        self.host.meta_event(event)
        if event.get("name") == "thread_name" and len(self.threads) < 100_000:
            name = text(args_of(event).get("name"))
            if "Communication" in name or name.startswith("Plane"):
                self.threads[(event.get("pid"), event.get("tid"))] = name

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
        elif role == "device":
            self._device(event, start, dur, tid)
        elif role == "comm":
            self._comm(event, start, dur, tid)
        elif role in ("host", "cann"):
            self.task_queue = self.task_queue or event.get("cat") in ("enqueue", "dequeue")
            self.host.host_event(event, start, dur, tid)

    def _comm(self, event: dict, start: float, dur: float, tid: int) -> None:
        pid = event.get("pid")
        index = self.hccl_pids.setdefault(pid, len(self.hccl_pids))
        key = (index << 32) | (tid & 0xFFFFFFFF)
        name = self.threads.get((pid, event.get("tid")))
        if name is not None and key not in self.hccl.threads:
            self.hccl.thread(key, name)
        self.hccl.event(event, start, dur, key)

    def _device(self, event: dict, start: float, dur: float, tid: int) -> None:
        name = text(event.get("name"))
        args = args_of(event)
        task_type = text(args.get("Task Type"))
        if is_wait(name, task_type):
            self.waits += 1
            return
        stream = next((s for s in map(integer, map(args.get, STREAM_ARGS)) if s is not None), tid)
        self.tl.device = "npu"
        self.tl.device_ops.append(
            start=start,
            dur=dur,
            stream=stream,
            launch=self.flow_ends.get((tid, round(start * 1000)), -1),
            name=name,
            type=op_type(name),
            core=core_of(task_type, name),
        )
        self.tids.append(tid)

    def finish(self) -> None:
        pending, self.pending = self.pending, []
        for event in pending:  # events written before their process's name
            if self.role(event.get("pid")):
                self.event(event)
        self._late_flows()
        streams = self.hccl.finish_streams()
        if streams:
            self._drop_streams(streams)
        self.hccl.finish()
        self.host.finish()
        if self.waits:
            self.tl.facts["stream_waits"] = self.waits

    def _late_flows(self) -> None:
        """Tie tasks read before their flow's end to their launch."""
        ops = self.tl.device_ops.cols
        for i in range(len(self.tids)):
            if ops["launch"][i] == -1:
                fid = self.flow_ends.get((self.tids[i], round(ops["start"][i] * 1000)))
                if fid is not None:
                    ops["launch"][i] = fid

    def _drop_streams(self, streams: set[int]) -> None:
        """Drop the Ascend Hardware tasks of the communication streams."""
        cols = self.tl.device_ops.cols
        keep = [i for i in range(len(self.tids)) if cols["stream"][i] not in streams]
        dropped = len(self.tids) - len(keep)
        if not dropped:
            return
        for name, col in cols.items():
            cols[name] = array(col.typecode, (col[i] for i in keep))
        self.tids = array("q", (self.tids[i] for i in keep))
        self.tl.facts["communication_stream_tasks"] = dropped


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
    if len(tl.host_ops):  # enqueue/dequeue events: TASK_QUEUE_ENABLE is on
        tl.facts["task_queue"] = reader.task_queue
