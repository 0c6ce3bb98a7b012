"""What one rank's profile holds, in one shape for every reader: the Timeline.

Readers (read/*) fill it; analyses (analyze/*, detectors/*) only read it. Times are
microseconds on the profile's own clock. Events that come by the million are kept in typed
columns (``array``) with their strings interned, so a rank of several million device ops
costs tens of MB, not GBs:

* ``device``: device ops (kernels, tasks, collectives, memcpys): start, duration, name,
  op type, accelerator core, stream, the launch key that ties it to the host op that
  launched it, input shapes and dtypes where the profile records them;
* ``host``: framework ops on the host (``cpu_op``: aten ops, ProfilerStep#N, optimizer
  steps, ACL calls such as ``aclrtSynchronizeStream`` or ``opCompile``), with thread and
  the call stack where one was recorded;
* ``frames``: Python frames (``python_function`` events), to find a host op's source line;
* ``launches``: launch key -> (thread, time) of the runtime call that launched a device op;
* ``overlap``: the Ascend profiler's own Computing / Communication / Communication(Not
  Overlapped) / Free tracks, when the profile has them;
* ``tables``: rows of files that already aggregate (step_trace_time.csv, op_statistic.csv,
  communication.json ...), by name;
* ``notes``: what the profile lacks or what was skipped, each a sentence for the report.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["COMM_CORES", "Columns", "DeviceOp", "HostOp", "Strings", "Timeline"]

# The accelerator "core" of a device op that communicates (HCCL on Ascend, NCCL kernels).
COMM_CORES = frozenset({"HCCL", "NCCL", "COMMUNICATION"})


class Strings:
    """Interned strings: ``id(text)`` -> int, ``[int]`` -> text. 0 is the empty string."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {"": 0}
        self._texts: list[str] = [""]

    def id(self, text: str | None) -> int:
        if not text:
            return 0
        got = self._ids.get(text)
        if got is None:
            got = self._ids[text] = len(self._texts)
            self._texts.append(text)
        return got

    def __getitem__(self, index: int) -> str:
        return self._texts[index]

    def __len__(self) -> int:
        return len(self._texts)


class Columns:
    """A table kept column by column: float columns ("d") and interned-string or integer
    columns ("q"). ``append(**row)`` adds a row; ``row(i)`` gives it back as a dict."""

    FLOATS: tuple[str, ...] = ()
    INTS: tuple[str, ...] = ()
    TEXTS: tuple[str, ...] = ()

    def __init__(self, strings: Strings) -> None:
        self.strings = strings
        self.cols: dict[str, array] = {name: array("d") for name in self.FLOATS}
        self.cols.update({name: array("q") for name in (*self.INTS, *self.TEXTS)})

    def __len__(self) -> int:
        first = self.FLOATS[0] if self.FLOATS else self.INTS[0]
        return len(self.cols[first])

    def append(self, **row: Any) -> None:
        cols, sid = self.cols, self.strings.id
        for name in self.FLOATS:
            cols[name].append(float(row.get(name, 0.0)))
        for name in self.INTS:
            cols[name].append(int(row.get(name, -1)))
        for name in self.TEXTS:
            cols[name].append(sid(row.get(name)))

    def text(self, name: str, index: int) -> str:
        return self.strings[self.cols[name][index]]


@dataclass(frozen=True, slots=True)
class DeviceOp:
    index: int
    name: str
    type: str
    core: str
    start: float
    dur: float
    stream: int
    launch: int
    shapes: str
    dtypes: str
    state: str
    bytes: float
    group: str
    step: int

    @property
    def end(self) -> float:
        return self.start + self.dur

    @property
    def is_comm(self) -> bool:
        return self.core in COMM_CORES


class DeviceOps(Columns):
    FLOATS = ("start", "dur", "bytes")  # bytes: what a collective or copy moved (0 unknown)
    # launch: key into Timeline.launches; step: the step the profile says ran it (-1 unknown)
    INTS = ("stream", "launch", "step")
    # group: a collective's process group ("" for compute); state: Ascend's OP State
    TEXTS = ("name", "type", "core", "shapes", "dtypes", "state", "group")

    def get(self, i: int) -> DeviceOp:
        c, s = self.cols, self.strings
        return DeviceOp(
            i,
            s[c["name"][i]],
            s[c["type"][i]],
            s[c["core"][i]],
            c["start"][i],
            c["dur"][i],
            c["stream"][i],
            c["launch"][i],
            s[c["shapes"][i]],
            s[c["dtypes"][i]],
            s[c["state"][i]],
            c["bytes"][i],
            s[c["group"][i]],
            c["step"][i],
        )

    def __iter__(self) -> Iterator[DeviceOp]:
        return (self.get(i) for i in range(len(self)))


@dataclass(frozen=True, slots=True)
class HostOp:
    index: int
    name: str
    tid: int
    start: float
    dur: float
    stack: str  # ";"-separated frames, innermost first, as the profile wrote them ("" if none)
    shapes: str
    dtypes: str

    @property
    def end(self) -> float:
        return self.start + self.dur


class HostOps(Columns):
    FLOATS = ("start", "dur")
    INTS = ("tid",)
    TEXTS = ("name", "stack", "shapes", "dtypes")

    def get(self, i: int) -> HostOp:
        c, s = self.cols, self.strings
        return HostOp(
            i,
            s[c["name"][i]],
            c["tid"][i],
            c["start"][i],
            c["dur"][i],
            s[c["stack"][i]],
            s[c["shapes"][i]],
            s[c["dtypes"][i]],
        )

    def __iter__(self) -> Iterator[HostOp]:
        return (self.get(i) for i in range(len(self)))


class Frames(Columns):
    """Python frames: ``name`` is "file(line): function" as the profilers write it."""

    FLOATS = ("start", "dur")
    INTS = ("tid",)
    TEXTS = ("name",)


class Overlap(Columns):
    """The Ascend profiler's overlap tracks: ``kind`` is Computing, Communication,
    Communication(Not Overlapped) or Free."""

    FLOATS = ("start", "dur")
    TEXTS = ("kind",)


@dataclass
class Step:
    """A profiler step as the host marked it (``ProfilerStep#N``); ``id`` None for a trace
    without step marks (the whole trace is one step)."""

    id: int | None
    start: float
    end: float


@dataclass
class Timeline:
    """One rank of one profile (see the module doc)."""

    path: str
    kind: str  # "ascend" | "kineto"
    device: str = "cpu"  # "npu" | "gpu" | "cpu": where the device ops ran
    rank: int | None = None
    world_size: int | None = None
    chip: str | None = None  # as the profile names it ("Ascend910B3", "NVIDIA A100-SXM4-80GB")
    strings: Strings = field(default_factory=Strings)
    steps: list[Step] = field(default_factory=list)
    launches: dict[int, tuple[int, float]] = field(default_factory=dict)
    tables: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)  # variables the profile recorded
    facts: dict[str, Any] = field(default_factory=dict)  # what the events show (task_queue: True)
    files: list[str] = field(default_factory=list)  # the files read, relative to path
    notes: list[str] = field(default_factory=list)
    device_ops: DeviceOps = field(init=False)
    host_ops: HostOps = field(init=False)
    frames: Frames = field(init=False)
    overlap: Overlap = field(init=False)

    def __post_init__(self) -> None:
        self.device_ops = DeviceOps(self.strings)
        self.host_ops = HostOps(self.strings)
        self.frames = Frames(self.strings)
        self.overlap = Overlap(self.strings)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
