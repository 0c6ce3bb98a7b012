"""Run one call on untrusted data in a forked child with a time and memory budget.

Some library calls grow with what a file *declares*, not with its size: ONNX shape
inference with data propagation turns a 113-byte model that declares ``float[2^40]`` into
2^40 symbolic dimensions. Such a call runs here, in a child process (``fork``: nothing is
re-imported) whose address space is capped (``RLIMIT_AS``) and which is killed when its
time is up; the parent gets the pickled result, or the reason it has none. Without
``fork`` (not Linux/macOS) the call runs in this process, unbounded.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Bounded", "run_bounded"]


class Bounded(Exception):
    """The call ran out of its budget or failed in the child; ``str()`` says which."""


def _address_space() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def run_bounded(fn: Callable[..., Any], *args: Any, seconds: float = 60.0, memory: int = 4 << 30) -> Any:
    """``fn(*args)``'s result, computed in a child with ``seconds`` of wall time and
    ``memory`` bytes of address space beyond this process's; Bounded otherwise."""
    if not hasattr(os, "fork"):
        return fn(*args)
    limit = _address_space() + memory
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller
        code = 0
        try:
            os.close(read_end)
            try:
                import resource

                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            except (ImportError, ValueError, OSError):
                pass
            try:
                payload = pickle.dumps(("ok", fn(*args)), protocol=pickle.HIGHEST_PROTOCOL)
            except MemoryError:
                payload = pickle.dumps(("error", "out of its memory budget"))
            except BaseException as exc:  # noqa: BLE001 - reported to the parent as data
                text = str(exc).strip().splitlines()
                why = text[0][:200] if text else type(exc).__name__
                if "bad_alloc" in why or "memory" in why.lower():
                    why = "out of its memory budget"
                payload = pickle.dumps(("error", why))
            view = memoryview(payload)
            while view:
                view = view[os.write(write_end, view) :]
        except BaseException:  # noqa: BLE001 - the child must end here, whatever happens
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + seconds
    try:
        while True:
            left = deadline - time.monotonic()
            ready = select.select([read_end], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                raise Bounded(f"over its time budget ({seconds:g} s)")
            data = os.read(read_end, 1 << 20)
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(read_end)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    if not chunks:
        raise Bounded("out of its memory budget or killed")
    status, value = pickle.loads(b"".join(chunks))
    if status != "ok":
        raise Bounded(value)
    return value
