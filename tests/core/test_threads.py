"""Contexts entered in the threads a program starts (torch's modes are per thread)."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor

from migrate.core import threads


def _recording(seen: list):
    @contextlib.contextmanager
    def make():
        seen.append(("enter", threading.current_thread().name))
        yield
        seen.append(("exit", threading.current_thread().name))

    return make


class Overriding(threading.Thread):
    def __init__(self, out: list):
        super().__init__(name="overriding")
        self.out = out

    def run(self) -> None:
        self.out.append("ran")


def test_threads_started_while_registered_run_inside_the_context():
    seen: list = []
    stop = threads.in_new_threads(_recording(seen))
    try:
        out: list = []
        t = Overriding(out)  # a subclass overriding run() is covered too
        t.start()
        t.join()
        with ThreadPoolExecutor(1, thread_name_prefix="pool") as pool:
            assert pool.submit(threads.name).result() == "pool_0"
        own = threading.Thread(target=lambda: None, name="migrate-report")
        own.start()
        own.join()
    finally:
        stop()
    assert out == ["ran"]
    assert seen == [("enter", "overriding"), ("exit", "overriding"), ("enter", "pool_0"), ("exit", "pool_0")]
    after = threading.Thread(target=lambda: None)
    after.start()
    after.join()
    assert len(seen) == 4 and threading.Thread.start is threads._ORIGINAL_START


def test_the_main_thread_has_no_name_and_is_not_foreign():
    assert threads.name() is None and not threads.foreign()
    local = threads.PerThread()
    local.owner = "elsewhere"
    assert local.attributed() is None  # a Python thread is attributed to itself
