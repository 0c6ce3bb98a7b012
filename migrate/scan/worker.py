"""One file's scan, in this process or in a worker: typed work items in, typed results out.

    WorkItem(path, rel, kind, known)  ->  FileResult(rel, path, kind, size, mtime_ns,
                                                      digest, findings, error)

The worker opens the discovered path (never a re-joined one), reads it through
core/fileio (regular files only, bounded), hashes the bytes and hands them to the reader of
the file's kind (migrate/scan/readers.py: decode, prefilter, match), so a UTF-16 file's
CUDA uses are found. ``findings is None`` means: the bytes hash to ``known``, the cached
result holds. Worker processes get the run's compiled RuleSet once, through the pool
initializer, and ignore SIGINT (the parent stops the pool on Ctrl-C; no worker traceback).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from migrate.core.errors import FileProblem
from migrate.core.fileio import SourceError, content_hash, read_bytes
from migrate.core.filekinds import FILE_KINDS
from migrate.core.findings import Finding
from migrate.core.targets import DEFAULT_TARGET
from migrate.scan.parallel import can_fork, clamp_jobs, quiet_worker
from migrate.scan.project import FileDevices
from migrate.scan.readers import READERS
from migrate.scan.ruleset import RuleSet

CHUNK = 64  # files per task


@dataclass(frozen=True)
class WorkItem:
    path: str  # the path discovery found (may be relative to the cwd)
    rel: str  # as reported
    kind: str
    known: str | None = None  # content hash in the cache, if any
    target: str = DEFAULT_TARGET  # the port target its fixes are made for
    devices: FileDevices | None = None  # the project around it (portable device helpers)


@dataclass
class FileResult:
    rel: str
    path: str
    kind: str
    size: int = -1
    mtime_ns: int = -1
    digest: str = ""
    findings: list[Finding] | None = None  # None: unchanged since the cached scan
    error: str | None = None


class Worker:
    """Scans work items with one compiled rule set."""

    def __init__(self, ruleset: RuleSet):
        self.ruleset = ruleset

    def run(self, items: Sequence[WorkItem]) -> list[FileResult]:
        return [self.scan(item) for item in items]

    def scan(self, item: WorkItem) -> FileResult:
        out = FileResult(item.rel, item.path, item.kind)
        try:
            data, st = read_bytes(item.path)
        except SourceError as exc:
            out.error = str(exc)
            return out
        out.size, out.mtime_ns, out.digest = st.st_size, st.st_mtime_ns, content_hash(data)
        if out.digest == item.known:
            return out
        read = READERS[FILE_KINDS[item.kind].reader]
        try:  # findings, and a problem worth reporting beside them
            out.findings, out.error = read(
                self.ruleset, item.path, item.rel, item.kind, data, item.target, item.devices
            )
        except (FileProblem, SourceError) as exc:
            out.findings, out.error = [], str(exc)
        except RecursionError:
            out.findings, out.error = [], "cannot scan: nesting too deep"
        except Exception as exc:  # a bug in a matcher must not end the scan
            out.findings, out.error = [], f"internal error: {type(exc).__name__}: {exc}"
        return out


_worker: Worker | None = None  # this worker process's Worker, set by the pool initializer


def _init_worker(ruleset: RuleSet) -> None:
    global _worker
    quiet_worker()  # a scan worker writes nothing: SIGTERM just stops it
    _worker = Worker(ruleset)


def _run_chunk(items: list[WorkItem]) -> list[FileResult]:
    assert _worker is not None
    return _worker.run(items)


def run_items(
    items: list[WorkItem],
    ruleset: RuleSet,
    jobs: int | None,
    parallel_threshold: int,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[FileResult]:
    """Results for every item, in worker processes when there are enough files."""
    total = len(items)
    jobs = clamp_jobs(jobs, total // CHUNK + 1)
    if jobs <= 1 or total < parallel_threshold or not can_fork():
        worker = Worker(ruleset)
        outs: Iterator[list[FileResult]] = (worker.run(items[i : i + CHUNK]) for i in range(0, total, CHUNK))
        yield from _counted(outs, progress, total)
        return
    n = jobs * 8
    chunks = [items[i::n] for i in range(n) if items[i::n]]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, initializer=_init_worker, initargs=(ruleset,)) as pool:
        yield from _counted(pool.imap_unordered(_run_chunk, chunks), progress, total)


def _counted(outs, progress, total: int) -> Iterator[FileResult]:
    done = 0
    for out in outs:
        yield from out
        done += len(out)
        if progress:
            progress(done, total)
