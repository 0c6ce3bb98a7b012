"""Work over many files in forked worker processes, when there are enough to pay off.

``map_in_workers(fn, items, jobs)`` is ``[fn(x) for x in items]``, computed by up to
``jobs`` forked processes (default: the CPU count) when there are at least
``PARALLEL_THRESHOLD`` items and the platform forks; in this process otherwise. ``fn`` and
its results must pickle (module-level functions, small results). Workers ignore SIGINT:
the parent stops the pool on Ctrl-C.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

PARALLEL_THRESHOLD = 200  # items before worker processes pay off


def clamp_jobs(jobs: int | None, work: int) -> int:
    """Worker count: at most the CPU count and the amount of work, at least 1."""
    cpus = os.cpu_count() or 1
    return max(1, min(jobs or cpus, cpus, work))


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def quiet_worker() -> None:
    """A worker's signals: Ctrl-C is the parent's to handle; SIGTERM just stops it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def map_in_workers(
    fn: Callable[[T], R], items: Sequence[T], jobs: int | None = None, threshold: int = PARALLEL_THRESHOLD
) -> list[R]:
    jobs = clamp_jobs(jobs, len(items) // 64 + 1)
    if jobs <= 1 or len(items) < threshold or not can_fork():
        return [fn(x) for x in items]
    chunk = max(1, len(items) // (jobs * 8))
    with multiprocessing.get_context("fork").Pool(jobs, initializer=quiet_worker) as pool:
        return pool.map(fn, items, chunksize=chunk)
