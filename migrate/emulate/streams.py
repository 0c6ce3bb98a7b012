"""``torch.npu`` streams and events. Every emulated op runs to completion on the CPU before
the next starts, so all orderings a program asks for hold already: streams and events are
bookkeeping (an event records the time it was recorded, for ``elapsed_time``)."""

from __future__ import annotations

import time
import types

import torch

EXPORTS = ("Stream", "Event", "current_stream", "default_stream", "set_stream", "stream",
           "StreamContext")


class Stream:
    def __init__(self, device=None, priority: int = 0, **_kwargs):
        from migrate.emulate.current import index

        self.device = torch.device("npu", index(device))
        self.priority = priority

    def wait_event(self, event) -> None:
        pass

    def wait_stream(self, stream) -> None:
        pass

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        from migrate.emulate.monitor import record_sync

        record_sync("Stream.synchronize()", depth=3)

    def __enter__(self):
        self._prev = _CURRENT["stream"]
        _CURRENT["stream"] = self
        return self

    def __exit__(self, *exc):
        _CURRENT["stream"] = self._prev
        return False

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)


class Event:
    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        self.enable_timing = enable_timing
        self.time: float | None = None

    def record(self, stream=None) -> None:
        self.time = time.perf_counter()

    def wait(self, stream=None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        from migrate.emulate.monitor import record_sync

        record_sync("Event.synchronize()", depth=3)

    def elapsed_time(self, end: Event) -> float:
        if not (self.enable_timing and end.enable_timing):
            raise RuntimeError("Both events must be created with enable_timing=True")
        if self.time is None or end.time is None:
            raise RuntimeError("Both events must be recorded before calling elapsed_time()")
        return (end.time - self.time) * 1000.0


_CURRENT: dict = {"stream": None}


def default_stream(device=None) -> Stream:
    if "default" not in _CURRENT:
        _CURRENT["default"] = Stream(device)
    return _CURRENT["default"]


def current_stream(device=None) -> Stream:
    return _CURRENT["stream"] or default_stream(device)


def set_stream(stream: Stream) -> None:
    _CURRENT["stream"] = stream


def stream(stream: Stream | None):
    return stream if stream is not None else _Null()


StreamContext = stream


class _Null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def module() -> types.ModuleType:
    mod = types.ModuleType("torch_npu.npu.streams", __doc__)
    for name in ("Stream", "Event"):
        setattr(mod, name, globals()[name])
    return mod
