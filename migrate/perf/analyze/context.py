"""One rank's Timeline prepared for the detectors: which step each device op belongs to,
each step's window on the host and on the device, and lookups the detectors share (the
framework op that launched a device op, the source line of a host op).

Steps: the host's ``ProfilerStep#N`` marks; without them, the step ids kernel_details.csv
gives; without either, the whole profile is one step (``id`` None). A device op belongs to
the step the profile says ran it (kernel_details' Step Id), else to the step whose host
window holds its launch (the flow or correlation to the runtime call), else to the step
whose host window holds its start. A step's device window runs from its first device op's
start to its last one's end, as torch_npu's step_trace_time.csv takes it.

A CPU run has no device ops: its outermost ``aten::`` ops of each thread are added as device
ops on core ``CPU``, so that the same breakdown says how much of a step the ops took.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from migrate.perf.analyze.stacks import Stacks
from migrate.perf.timeline import DeviceOp, HostOp, Step, Timeline

__all__ = ["RankContext", "StepWindow"]


@dataclass
class StepWindow:
    id: int | None
    host_start: float
    host_end: float
    dev_start: float = float("inf")
    dev_end: float = float("-inf")
    ops: list[int] = field(default_factory=list)  # device op indices

    @property
    def has_device(self) -> bool:
        return self.dev_end > self.dev_start


def _cpu_ops(tl: Timeline) -> None:
    """Add each thread's outermost aten ops as device ops of core CPU (a CPU run)."""
    host = tl.host_ops
    order = sorted(
        (i for i in range(len(host)) if tl.strings[host.cols["name"][i]].startswith("aten::")),
        key=lambda i: (host.cols["tid"][i], host.cols["start"][i], -host.cols["dur"][i]),
    )
    tid, outer_end = None, float("-inf")
    for i in order:
        op = host.get(i)
        if op.tid != tid:
            tid, outer_end = op.tid, float("-inf")
        if op.start < outer_end:
            continue
        outer_end = op.end
        tl.device_ops.append(
            start=op.start,
            dur=op.dur,
            stream=op.tid,
            launch=-1,
            step=-1,
            name=op.name,
            type=op.name,
            core="CPU",
        )


class RankContext:
    def __init__(self, tl: Timeline) -> None:
        self.tl = tl
        if tl.device == "cpu" and not len(tl.device_ops):
            _cpu_ops(tl)
        self.windows = self._windows()
        self.op_step = array("q", [-1]) * len(tl.device_ops)  # index into windows
        self._assign()

    # -- steps ---------------------------------------------------------------------------
    def _windows(self) -> list[StepWindow]:
        tl = self.tl
        if tl.steps:
            return [StepWindow(s.id, s.start, s.end) for s in tl.steps]
        ids = sorted({s for s in tl.device_ops.cols["step"] if s >= 0})
        if ids:
            tl.steps = [Step(i, float("-inf"), float("inf")) for i in ids]
            return [StepWindow(i, float("-inf"), float("inf")) for i in ids]
        return [StepWindow(None, float("-inf"), float("inf"))]

    def _assign(self) -> None:
        cols = self.tl.device_ops.cols
        by_id = {w.id: k for k, w in enumerate(self.windows)}
        starts = [w.host_start for w in self.windows]
        launches = self.tl.launches
        for i in range(len(self.tl.device_ops)):
            k = by_id.get(cols["step"][i], -1) if cols["step"][i] >= 0 else -1
            if k < 0:
                launch = launches.get(cols["launch"][i])
                k = self._window_at(
                    launch[1] if launch else cols["start"][i], starts, strict=launch is not None
                )
            if k < 0:
                continue
            self.op_step[i] = k
            w = self.windows[k]
            w.ops.append(i)
            start, end = cols["start"][i], cols["start"][i] + cols["dur"][i]
            w.dev_start, w.dev_end = min(w.dev_start, start), max(w.dev_end, end)

    def _window_at(self, t: float, starts: list[float], strict: bool) -> int:
        """The step whose host window holds ``t``; a device op (not strict) also belongs to
        the last step that started before it, when it ran after that step's host end."""
        k = bisect.bisect_right(starts, t) - 1
        if k < 0:
            return -1
        w = self.windows[k]
        if t < w.host_end:
            return k
        if strict:
            return -1
        return k if k == len(self.windows) - 1 or t < self.windows[k + 1].host_start else -1

    @property
    def step_count(self) -> int:
        return max(1, sum(1 for w in self.windows if w.has_device or w.ops))

    # -- lookups ---------------------------------------------------------------------------
    def device_op(self, i: int) -> DeviceOp:
        return self.tl.device_ops.get(i)

    def ops_in_steps(self) -> list[int]:
        return [i for w in self.windows for i in w.ops]

    @cached_property
    def host_by_name(self) -> dict[int, list[int]]:
        """name id -> indices of the host ops of that name (one pass, built on first use)."""
        out: dict[int, list[int]] = {}
        for i, name in enumerate(self.tl.host_ops.cols["name"]):
            out.setdefault(name, []).append(i)
        return out

    def host_ops_in(
        self,
        window: StepWindow,
        names: frozenset[str] | None = None,
        match: Callable[[str], bool] | None = None,
    ) -> list[HostOp]:
        """Host ops that start in ``window``'s host window whose name is in ``names`` or
        passes ``match``, in time order. Only the ops of the wanted names are visited, so a
        detector asking for a few names costs what those ops cost, not the trace."""
        cols, strings = self.tl.host_ops.cols, self.tl.strings
        ids = [
            sid
            for sid in self.host_by_name
            if (names and strings[sid] in names) or (match and match(strings[sid]))
        ]
        lo, hi = window.host_start, window.host_end
        found = [i for sid in ids for i in self.host_by_name[sid] if lo <= cols["start"][i] < hi]
        found.sort(key=lambda i: cols["start"][i])
        return [self.tl.host_ops.get(i) for i in found]

    def window_of_host(self, t: float) -> int:
        return self._window_at(t, [w.host_start for w in self.windows], strict=True)

    @cached_property
    def stacks(self) -> Stacks:
        return Stacks(self.tl)

    def location(self, op: HostOp) -> str | None:
        """The user's source line of host op ``op``, where the profile recorded stacks."""
        return self.stacks.location(op)

    @cached_property
    def launcher(self) -> dict[int, int]:
        """device op index -> index of the innermost framework op around its launch."""
        return self.stacks.launchers(self.tl)
