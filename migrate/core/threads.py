"""Context managers entered in every thread the program starts (``threading.Thread``, and so
ThreadPoolExecutor's workers and DataLoader's pin-memory thread): torch's dispatch and
function modes live on a per-thread stack, so a mode pushed in the main thread never sees
what a worker thread runs. ``Thread.start`` is wrapped once; each thread started while a
context is registered runs its ``run()`` inside a fresh instance of it; this tool's own
threads (named ``migrate-*``) do not."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

_CONTEXTS: list[Callable[[], AbstractContextManager]] = []
_ORIGINAL_START = threading.Thread.start


def _start(self: threading.Thread) -> None:
    contexts = list(_CONTEXTS)
    if contexts and not self.name.startswith("migrate-"):
        body = self.run

        def run() -> None:
            with contextlib.ExitStack() as stack:
                for make in contexts:
                    stack.enter_context(make())
                body()

        self.run = run  # type: ignore[method-assign]  # this thread only
    _ORIGINAL_START(self)


def in_new_threads(make: Callable[[], AbstractContextManager]) -> Callable[[], None]:
    """Enter ``make()`` around ``run()`` of every thread started from now on; returns the
    function that stops it (threads already started keep their context)."""
    threading.Thread.start = _start  # type: ignore[method-assign]
    _CONTEXTS.append(make)

    def remove() -> None:
        if make in _CONTEXTS:
            _CONTEXTS.remove(make)
        if not _CONTEXTS:
            threading.Thread.start = _ORIGINAL_START  # type: ignore[method-assign]

    return remove


def name() -> str | None:
    """The current thread's name, or None in the main thread."""
    current = threading.current_thread()
    return None if current is threading.main_thread() else current.name


def foreign() -> bool:
    """The current thread was not started by Python's threading (a C++ thread: autograd's
    device threads)."""
    return isinstance(threading.current_thread(), threading._DummyThread)


class PerThread(threading.local):
    """A capture's state of the current thread: ``suppress`` (inside a composite recorded
    whole), the module ``stack``, ``pending`` outputs to tag, and ``owner``: the thread of
    the mode the last op passed through (see :meth:`attributed`)."""

    def __init__(self) -> None:
        self.suppress = 0
        self.stack: list[str] = []
        self.pending: list = []
        self.owner: str | None = None

    def attributed(self) -> str | None:
        """The thread an op running now is attributed to (None: the main thread). A thread
        Python did not start (autograd's device thread running a backward) gets the thread
        whose mode the op passed through: autograd carries its caller's modes along."""
        return self.owner if foreign() else name()
