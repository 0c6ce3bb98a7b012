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
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from migrate.core.errors import FileProblem, too_deep
from migrate.core.fileio import SourceError, content_hash, read_bytes
from migrate.core.filekinds import FILE_KINDS
from migrate.core.findings import Finding
from migrate.core.own_process import fewer_collections
from migrate.core.targets import DEFAULT_TARGET
from migrate.scan.parallel import can_fork, clamp_jobs, quiet_worker
from migrate.scan.project import FileDevices, file_facts, script_imports
from migrate.scan.readers import NEEDS_PROJECT, READERS, may_match
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
    checked: bool = False  # the survey found a token in it (its prefilter is not run again)


@dataclass(frozen=True)
class SurveyItem:
    """One file of the survey: its scan (None: read only for its package's facts) and the
    package top whose discovery wants its facts (None: not a package file to read)."""

    path: str
    scan: WorkItem | None = None
    top: str | None = None
    configured: str | None = None  # [tool.migrate] device-helper
    script: bool = False  # a file outside any package: discovery wants its imports


@dataclass
class SurveyResult:
    path: str
    result: FileResult | None  # None: the file needs the project (run_items), or was not scanned
    rel: str | None = None  # the scanned file's reported path
    facts: Any = None  # file_facts of a package file, script_imports of a script


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

    def survey(self, items: Sequence[SurveyItem]) -> list[SurveyResult]:
        return [self.survey_one(item) for item in items]

    def survey_one(self, item: SurveyItem) -> SurveyResult:
        result, data = (None, None) if item.scan is None else self._first(item.scan)
        facts: Any = None
        if item.top is not None:
            facts = file_facts(item.top, item.path, item.configured, data)
        elif item.script:
            facts = script_imports(item.path, data)
        rel = None if item.scan is None else item.scan.rel
        return SurveyResult(item.path, result, rel=rel, facts=facts)

    def _first(self, item: WorkItem) -> tuple[FileResult | None, bytes | None]:
        """The file's result if it does not need the project (None if it may), and its bytes."""
        out, data = self._read(item)
        if data is None or FILE_KINDS[item.kind].reader not in NEEDS_PROJECT:
            return (out if data is None else self._match(item, out, data)), data
        try:
            if may_match(self.ruleset, item.path, item.rel, item.kind, data, item.target):
                return None, data
            out.findings = []
        except (FileProblem, SourceError) as exc:
            out.findings, out.error = [], str(exc)
        return out, data

    def scan(self, item: WorkItem) -> FileResult:
        out, data = self._read(item)
        if data is None or out.digest == item.known:
            return out
        return self._match(item, out, data)

    def _read(self, item: WorkItem) -> tuple[FileResult, bytes | None]:
        out = FileResult(item.rel, item.path, item.kind)
        try:
            data, st = read_bytes(item.path)
        except SourceError as exc:
            out.error = str(exc)
            return out, None
        out.size, out.mtime_ns, out.digest = st.st_size, st.st_mtime_ns, content_hash(data)
        return out, data

    def _match(self, item: WorkItem, out: FileResult, data: bytes) -> FileResult:
        read = READERS[FILE_KINDS[item.kind].reader]
        try:  # findings, and a problem worth reporting beside them
            out.findings, out.error = read(
                self.ruleset, item.path, item.rel, item.kind, data, item.target, item.devices, item.checked
            )
        except (FileProblem, SourceError) as exc:
            out.findings, out.error = [], str(exc)
        except (RecursionError, MemoryError) as exc:
            out.findings, out.error = [], f"cannot scan: {too_deep(exc)}"
        except Exception as exc:  # a bug in a matcher must not end the scan
            out.findings, out.error = [], f"internal error: {type(exc).__name__}: {exc}"
        return out


_worker: Worker | None = None  # this worker process's Worker, set by the pool initializer


def _init_worker(ruleset: RuleSet) -> None:
    global _worker
    quiet_worker()  # a scan worker writes nothing: SIGTERM just stops it
    fewer_collections()  # migrate/core/own_process.py: a worker runs only the tool's code
    _worker = Worker(ruleset)


def _run_chunk(items: list[WorkItem]) -> list[FileResult]:
    assert _worker is not None
    return _worker.run(items)


def _survey_chunk(items: list[SurveyItem]) -> list[SurveyResult]:
    assert _worker is not None
    return _worker.survey(items)


class Workers:
    """A scan's workers: forked processes sharing the run's compiled rule set (``pool``), or
    this process. Both passes hand out results in chunks, as they finish."""

    def __init__(self, ruleset: RuleSet, pool=None, jobs: int = 1):
        self.worker = Worker(ruleset)
        self.pool, self.jobs = pool, jobs

    def survey(self, items: list[SurveyItem]) -> Iterator[list[SurveyResult]]:
        return self._map(_survey_chunk, self.worker.survey, items, self.jobs * 8)

    def scan(self, items: list[WorkItem]) -> Iterator[list[FileResult]]:
        """Results for every item. Hand the largest files first: these are the files that
        are parsed, and small chunks keep the last of them from running on one worker."""
        return self._map(_run_chunk, self.worker.run, items, max(self.jobs * 8, min(len(items) // 2, 512)))

    def _map(self, remote: Callable, local: Callable, items: list, n: int) -> Iterator[list]:
        if self.pool is None:
            return (local(items[i : i + CHUNK]) for i in range(0, len(items), CHUNK))
        chunks = [items[i::n] for i in range(n) if items[i::n]]
        return self.pool.imap_unordered(remote, chunks)


@contextmanager
def worker_pool(ruleset: RuleSet, jobs: int | None, work: int, threshold: int) -> Iterator[Workers]:
    """The workers of one scan: ``jobs`` forked processes when there are at least
    ``threshold`` files of work (``work``) and the platform forks; else this process."""
    jobs = clamp_jobs(jobs, work // CHUNK + 1)
    if jobs <= 1 or work < threshold or not can_fork():
        yield Workers(ruleset)
        return
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, initializer=_init_worker, initargs=(ruleset,)) as pool:
        yield Workers(ruleset, pool, jobs)


def run_items(
    items: list[WorkItem],
    ruleset: RuleSet,
    jobs: int | None,
    parallel_threshold: int,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[FileResult]:
    """Results for every item, in worker processes when there are enough files."""
    total, done = len(items), 0
    with worker_pool(ruleset, jobs, total, parallel_threshold) as workers:
        for out in workers.scan(items):
            yield from out
            done += len(out)
            if progress:
                progress(done, total)
