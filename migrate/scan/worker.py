"""One file's scan, in this process or in a worker: typed work items in, typed results out.

    WorkItem(path, rel, kind, known)  ->  FileResult(rel, path, kind, size, mtime_ns,
                                                      digest, findings, error)

The worker opens the discovered path (never a re-joined one), reads it through
core/fileio (regular files only, bounded), hashes the bytes, decodes them (BOM, PEP 263)
and runs the byte prefilter on the decoded content, so a UTF-16 file's CUDA uses are
found. ``findings is None`` means: the bytes hash to ``known``, the cached result holds.
Worker processes get their rules once, through the pool initializer, and ignore SIGINT
(the parent stops the pool on Ctrl-C; no worker traceback).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from migrate.core.errors import FileProblem
from migrate.core.fileio import SourceError, content_hash, decode, prefilter_bytes, read_bytes
from migrate.core.findings import Finding
from migrate.core.rules import Rule
from migrate.core.targets import DEFAULT_TARGET
from migrate.scan.project import FileDevices
from migrate.scan.python.kinds import rules_for_path
from migrate.scan.python.prefilter import python_prefilter

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
    """Scans work items with one rule selection; holds per-selection prefilters."""

    def __init__(self, rules: Sequence[Rule], scan_text: Callable):
        self.rules = tuple(rules)
        self.scan_text = scan_text
        self._prefilters: dict[int, object] = {}
        self._problem: str | None = None

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
        self._problem = None
        try:
            out.findings = self._findings(item, data)
            out.error = self._problem  # findings, and a problem worth reporting
        except (FileProblem, SourceError) as exc:
            out.findings, out.error = [], str(exc)
        except RecursionError:
            out.findings, out.error = [], "cannot scan: nesting too deep"
        except Exception as exc:  # a bug in a matcher must not end the scan
            out.findings, out.error = [], f"internal error: {type(exc).__name__}: {exc}"
        return out

    def _prefilter(self, rel: str):
        selected = rules_for_path(self.rules, rel)
        if id(selected) not in self._prefilters:
            self._prefilters[id(selected)] = python_prefilter(selected)
        return self._prefilters[id(selected)]

    def _findings(self, item: WorkItem, data: bytes) -> list[Finding]:
        if item.kind == "onnx":
            return _scan_onnx(Path(item.path), item.rel, self.rules)
        source = decode(data, python=item.kind == "python", path=item.path)
        if item.kind in ("python", "notebook"):
            prefilter = self._prefilter(item.rel)
            if prefilter is not None and not prefilter.search(prefilter_bytes(source)):
                return []
        if item.kind == "notebook":
            from migrate.scan.python.notebook import NotebookError, scan_notebook
            from migrate.scan.python.scanner import scan_python

            from migrate.scan.engine import with_shadows

            matching, keep = with_shadows(self.rules)
            try:
                found = scan_notebook(source.text, item.rel, matching,
                                      lambda t, r, rs: scan_python(t, r, rs, item.target,
                                                                       item.devices))
                return found if keep is None else [f for f in found if f.rule in keep]
            except NotebookError as exc:
                raise FileProblem(str(exc)) from None
        findings = self.scan_text(source.text, item.rel, item.kind, self.rules, item.target,
                                  item.devices)
        if item.kind == "pyproject":
            self._problem = _toml_problem(source.text)
        return findings


def _toml_problem(text: str) -> str | None:
    import tomllib

    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return f"invalid TOML: {exc}"
    except RecursionError:
        return "invalid TOML: nesting too deep"
    return None


def _scan_onnx(path: Path, rel: str, rules) -> list[Finding]:
    from migrate.core.kinds import kinds_of

    findings: list[Finding] = []
    for spec in kinds_of("onnx"):
        group = [r for r in rules if r.kind == spec.name]
        if not group:
            continue
        found, errors = spec.run(path, rel, group)
        if errors:
            raise FileProblem(errors[0].message)
        findings += found
    return findings


_worker: Worker | None = None  # this worker process's Worker, set by the pool initializer


def _init_worker(rules: tuple[Rule, ...], scan_text: Callable) -> None:
    global _worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a scan worker writes nothing: just stop
    _worker = Worker(rules, scan_text)


def _run_chunk(items: list[WorkItem]) -> list[FileResult]:
    assert _worker is not None
    return _worker.run(items)


def clamp_jobs(jobs: int | None, work: int) -> int:
    """Worker count: at most the CPU count and the amount of work, at least 1."""
    cpus = os.cpu_count() or 1
    return max(1, min(jobs or cpus, cpus, work))


def run_items(items: list[WorkItem], rules: Sequence[Rule], scan_text: Callable,
              jobs: int | None, parallel_threshold: int,
              progress: Callable[[int, int], None] | None = None) -> Iterator[FileResult]:
    """Results for every item, in worker processes when there are enough files."""
    total = len(items)
    jobs = clamp_jobs(jobs, total // CHUNK + 1)
    methods = multiprocessing.get_all_start_methods()
    if jobs <= 1 or total < parallel_threshold or "fork" not in methods:
        worker = Worker(rules, scan_text)
        outs: Iterator[list[FileResult]] = (worker.run(items[i:i + CHUNK])
                                            for i in range(0, total, CHUNK))
        yield from _counted(outs, progress, total)
        return
    n = jobs * 8
    chunks = [items[i::n] for i in range(n) if items[i::n]]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, initializer=_init_worker, initargs=(tuple(rules), scan_text)) as pool:
        yield from _counted(pool.imap_unordered(_run_chunk, chunks), progress, total)


def _counted(outs, progress, total: int) -> Iterator[FileResult]:
    done = 0
    for out in outs:
        yield from out
        done += len(out)
        if progress:
            progress(done, total)
