"""What Kineto traces and Ascend ``trace_view.json`` share: Chrome trace events of the
host side (framework ops, Python frames, step marks, process and thread names), turned
into a Timeline's host columns. The two readers (kineto.py, ascend_trace.py) hand every
event here first and keep the device side to themselves.
"""

from __future__ import annotations

import math
import re
from typing import Any

from migrate.perf.timeline import Step, Timeline

__all__ = ["HostSide", "number", "shape_text"]

_STEP = re.compile(r"ProfilerStep#(\d+)")
HOST_CATEGORIES = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver"}
MAX_TEXT = 4096  # a name, stack or shape list kept at most this long


def number(value: Any) -> float | None:
    """A finite float from a JSON number or numeric string (Ascend writes "ts" as a string,
    sometimes with a trailing tab), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        out = float(value)
    elif isinstance(value, str) and len(value) < 64:
        try:
            out = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return out if math.isfinite(out) else None


def integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -(1 << 62) < value < 1 << 62 else None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 20:
        return int(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1 << 62:
        return int(value)
    return None


def text(value: Any) -> str:
    return value[:MAX_TEXT] if isinstance(value, str) else ""


def shape_text(dims: Any) -> str:
    """``[[2, 3], [3], []]`` -> "2,3;3;" (the form kernel_details.csv uses)."""
    if not isinstance(dims, list):
        return text(dims)
    parts = []
    for dim in dims[:64]:
        if isinstance(dim, list):
            parts.append(",".join(str(d) for d in dim[:16] if isinstance(d, int) and not isinstance(d, bool)))
        else:
            parts.append("")
    return ";".join(parts)[:MAX_TEXT]


def args_of(event: dict) -> dict:
    args = event.get("args")
    return args if isinstance(args, dict) else {}


def dtype_text(types: Any) -> str:
    if isinstance(types, list):
        return ";".join(t if isinstance(t, str) else "" for t in types[:64])[:MAX_TEXT]
    return text(types)


class HostSide:
    """Collects process/thread names, step marks, host ops and Python frames."""

    def __init__(self, timeline: Timeline, clock: Clock | None = None) -> None:
        self.tl = timeline
        self.process_names: dict[Any, str] = {}
        self.process_labels: dict[Any, str] = {}
        self.bad_events = 0
        self.clock = clock or Clock()

    def meta_event(self, event: dict) -> None:
        args = args_of(event)
        name = event.get("name")
        pid = event.get("pid")
        if name == "process_name" and isinstance(args.get("name"), str):
            self.process_names[pid] = args["name"][:256]
        elif name == "process_labels" and isinstance(args.get("labels"), str):
            self.process_labels[pid] = args["labels"][:256]

    def host_event(self, event: dict, start: float, dur: float, tid: int) -> None:
        """A complete ('X') event on the host: a step mark, a Python frame or a host op."""
        name = text(event.get("name"))
        if event.get("cat") == "python_function":
            self.tl.frames.append(start=start, dur=dur, tid=tid, name=name)
            return
        args = args_of(event)
        m = _STEP.fullmatch(name)
        if m and len(m.group(1)) < 12:
            self.tl.steps.append(Step(int(m.group(1)), start, start + dur))
        self.tl.host_ops.append(
            start=start,
            dur=dur,
            tid=tid,
            name=name,
            stack=text(args.get("Call stack")).replace("\r\n", "").replace("\n", ""),
            shapes=shape_text(args.get("Input Dims")),
            dtypes=dtype_text(args.get("Input type")),
        )

    def finish(self) -> None:
        """Steps in order, one per id (a step marked twice keeps its widest window)."""
        by_id: dict[int | None, Step] = {}
        for step in self.tl.steps:
            got = by_id.get(step.id)
            if got is None:
                by_id[step.id] = step
            else:
                got.start, got.end = min(got.start, step.start), max(got.end, step.end)
        self.tl.steps = sorted(by_id.values(), key=lambda s: (s.start, s.id or 0))
        if self.bad_events:
            self.tl.note(f"{self.bad_events} event(s) without a usable time or duration were skipped")


class Clock:
    """Timestamps relative to the first one seen, so microseconds since the epoch (1.7e15,
    where a float's spacing is 0.25 us) keep their nanoseconds: Ascend writes "ts" as a
    decimal string, whose integer and fraction parts are taken apart before the float."""

    def __init__(self) -> None:
        self.base: int | None = None

    def us(self, value: Any) -> float | None:
        if isinstance(value, str) and len(value) < 64:
            whole, _, frac = value.strip().partition(".")
            if whole.lstrip("-").isdigit() and (not frac or frac.isdigit()):
                if self.base is None:
                    self.base = int(whole)
                return (int(whole) - self.base) + (float("0." + frac) if frac else 0.0)
        got = number(value)
        if got is None:
            return None
        if self.base is None:
            self.base = int(got)
        return got - self.base

    def key(self, value: Any) -> int | None:
        """A nanosecond key of a timestamp, to match a flow's end with its op."""
        got = self.us(value)
        return None if got is None else round(got * 1000)


def times(event: dict, clock: Clock) -> tuple[float, float] | None:
    """(start, duration) of a complete event, or None when either is missing or bad."""
    start = clock.us(event.get("ts"))
    dur = number(event.get("dur"))
    if start is None or dur is None or dur < 0 or dur > 1e13:
        return None
    return start, dur
