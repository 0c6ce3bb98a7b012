"""``torch.npu`` streams and events. Every emulated op runs to completion on the CPU before
the next starts, so all orderings a program asks for hold already: streams and events are
bookkeeping (an event records the time it was recorded, for ``elapsed_time``).

As torch_npu's, they are ``torch.Stream`` / ``torch.Event`` subclasses, so device-generic code
(``torch.accelerator.current_stream().wait_stream(s)``, ``isinstance(s, torch.Stream)``)
takes them; every method that would reach the device is answered here."""

from __future__ import annotations

import time
import types

import torch

EXPORTS = ("Stream", "Event", "current_stream", "default_stream", "set_stream", "stream", "StreamContext")


def _sync(what: str) -> None:
    from migrate.emulate.monitor import record_sync

    record_sync(what, depth=4)


class Stream(torch.Stream):
    """``torch.npu.Stream(device=None, priority=0)``."""

    def __new__(cls, device=None, priority: int = 0, **_kwargs):
        from migrate.emulate.current import index

        self = super().__new__(cls, torch.device("npu", index(device)), priority=priority)
        self.npu_index, self.npu_priority = index(device), priority
        return self

    def __init__(self, device=None, priority: int = 0, **_kwargs):
        pass

    @property
    def priority(self) -> int:
        return self.npu_priority

    def wait_event(self, event) -> None:
        pass

    def wait_stream(self, stream) -> None:
        pass

    def record_event(self, event=None):
        event = event if event is not None else Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        _sync("Stream.synchronize()")

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

    def __repr__(self) -> str:
        return f"<torch.npu.Stream device=npu:{self.npu_index} (emulated) at {id(self):#x}>"


class Event(torch.Event):
    """``torch.npu.Event(enable_timing=False, blocking=False, interprocess=False)``."""

    def __new__(
        cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False, **_kwargs
    ):
        self = super().__new__(cls, torch.device("npu", 0), enable_timing=enable_timing)
        self.timing = enable_timing
        self.time = None  # type: ignore[assignment]  # set by record()
        return self

    def __init__(self, *_args, **_kwargs):
        pass

    def record(self, stream=None) -> None:
        self.time = time.perf_counter()

    def wait(self, stream=None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        _sync("Event.synchronize()")

    def elapsed_time(self, end: Event) -> float:  # type: ignore[override]
        if not (self.timing and getattr(end, "timing", False)):
            raise RuntimeError("Both events must be created with enable_timing=True")
        if self.time is None or end.time is None:
            raise RuntimeError("Both events must be recorded before calling elapsed_time()")
        return (end.time - self.time) * 1000.0

    def __repr__(self) -> str:
        return f"<torch.npu.Event (emulated) at {id(self):#x}>"


_CURRENT: dict = {"stream": None}


def default_stream(device=None) -> Stream:
    if "default" not in _CURRENT:
        _CURRENT["default"] = Stream(device)
    return _CURRENT["default"]


def current_stream(device=None) -> Stream:
    return _CURRENT["stream"] or default_stream(device)


def set_stream(stream: Stream) -> None:
    _CURRENT["stream"] = stream if isinstance(stream, Stream) else None


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
