"""The scan engine: files -> findings.

scan_text(text, rel, file_kind, rules) -> list[Finding]
    Findings (with fixes) for one file's decoded text; FileProblem if it cannot be parsed
    (migrate/scan/readers.py).
scan_paths(paths, options) -> ScanResult
    Discovery, cache, the rules compiled once (scan/ruleset.py), parallel
    read/decode/prefilter/parse (scan/worker.py); never raises on bad files.
    ``result.files`` records, per reported path, the path that was opened and the
    content hash of the bytes scanned: apply rewrites only those bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.core import reads
from migrate.core.errors import FileProblem
from migrate.core.findings import FileError, FileRecord, Finding, ScanResult
from migrate.core.rules import Rule, default_rules, select_rules
from migrate.core.targets import TargetChoice
from migrate.scan.cache import Entry, ScanCache
from migrate.scan.discover import SourceFile, Walker, scan_root
from migrate.scan.parallel import PARALLEL_THRESHOLD
from migrate.scan.project import Discovery, ProjectContext
from migrate.scan.readers import scan_text
from migrate.scan.ruleset import RuleSet
from migrate.scan.worker import FileResult, SurveyItem, Workers, WorkItem, worker_pool

__all__ = ["FileProblem", "ScanOptions", "scan_paths", "scan_text"]


@dataclass
class ScanOptions:
    select: list[str] | None = None
    ignore: list[str] | None = None
    extend_select: list[str] | None = None
    exclude: list[str] = field(default_factory=list)
    jobs: int | None = None
    cache_dir: Path | None = None  # None: no cache
    respect_gitignore: bool = True
    follow_symlinks: bool = False  # follow symlinks that leave the given paths
    trust_mtime: bool = True  # cache hit on size + mtime without reading (apply: False)
    progress: Callable[[int, int], None] | None = None
    rules: Sequence[Rule] | None = None  # default: the shipped rules, filtered by select/ignore
    targets: TargetChoice = field(default_factory=TargetChoice)
    device_helper: str | None = None  # [tool.migrate] device-helper: the project's helper module


def scan_paths(paths: Sequence[Path], options: ScanOptions | None = None) -> ScanResult:
    options = options or ScanOptions()
    custom = options.rules is not None
    rules = (
        list(options.rules or ())
        if custom
        else select_rules(default_rules(), options.select, options.ignore, options.extend_select)
    )
    paths = [Path(p) for p in paths]
    root = scan_root(paths)
    walker = Walker(root, options.exclude, options.respect_gitignore, options.follow_symlinks)
    files = list(walker.walk(paths))
    discovery = Discovery(
        [(Path(sf.path), sf.rel) for sf in files if sf.kind == "python"],
        root,
        options.device_helper,
        # apply (trust_mtime off) reads every package afresh, as it reads every file
        options.cache_dir if options.trust_mtime and not custom else None,
        options.jobs,
    )
    codes = [*(r.code for r in rules), options.targets.key()]
    cache = ScanCache(None) if custom else ScanCache.load(options.cache_dir, root, codes, rules)
    result = ScanResult(
        errors=list(walker.errors),
        files_scanned=len(files),
        target=options.targets.describe(),
        roots=[] if options.follow_symlinks else list(walker.roots),
    )
    stats = {sf.rel: _stat(sf.path) for sf in files}
    for sf in files:
        reads.file(sf.path)  # read here or by a worker
    survey = _survey_items(files, discovery, cache, stats, options)
    count = _Progress(options.progress, len(files))
    ruleset = RuleSet(rules)
    with worker_pool(ruleset, options.jobs, len(survey.items) + len(files), PARALLEL_THRESHOLD) as workers:
        settled, needs, project = _first_pass(workers, survey, discovery, count)
        result.project = project
        cache.bind(project.key())
        todo: list[tuple[int, WorkItem]] = []
        for sf in files:
            st = stats[sf.rel]
            hit = cache.lookup(sf.rel, st) if options.trust_mtime else None
            if hit is not None:
                record = FileRecord(str(sf.path), sf.kind, hit.digest, cached=True, real=sf.real)
                _collect(result, record, sf.rel, hit.findings, hit.error)
                count.add(1)
            elif sf.rel in settled:
                _store(result, cache, settled[sf.rel], sf.real)
            else:
                known = cache.entries[sf.rel].digest if sf.rel in cache.entries else None
                target = options.targets.for_path(sf.rel)
                devices = project.for_file(sf.rel)
                item = WorkItem(str(sf.path), sf.rel, sf.kind, known, target, devices, sf.rel in needs)
                todo.append((st.st_size if st else 0, item))
        todo.sort(key=lambda si: -si[0])  # the largest first: they take longest
        reals = {sf.rel: sf.real for sf in files}
        for out in workers.scan([item for _, item in todo]):
            for res in out:
                _store(result, cache, res, reals.get(res.rel, ""))
            count.add(len(out))
    cache.save({sf.rel for sf in files})
    result.findings.sort(key=Finding.sort_key)
    result.errors.sort(key=lambda e: e.path)
    return result


def _first_pass(
    workers: Workers, survey: _Survey, discovery: Discovery, count: _Progress
) -> tuple[dict[str, FileResult], set[str], ProjectContext]:
    """Read every surveyed file once: the results it settles (by reported path), the files
    it found may match (their tokens found: not searched again), and the project context
    from the facts it read."""
    settled: dict[str, FileResult] = {}
    needs: set[str] = set()
    read: dict[str, dict[str, Any]] = {top: {} for top in discovery.to_read}
    script_uses: dict[str, set[str]] = {}
    for chunk in workers.survey(survey.items):
        for sr in chunk:
            if sr.result is not None:
                settled[sr.result.rel] = sr.result
            elif sr.rel is not None:
                needs.add(sr.rel)
            top = survey.tops.get(sr.path)
            if top is not None:
                read[top][sr.path] = sr.facts
            elif sr.path in survey.scripts:
                script_uses[sr.path] = sr.facts
        count.add(sum(1 for sr in chunk if sr.result is not None))
    project = discovery.finish(
        {top: [got.get(name) for name in discovery.to_read[top]] for top, got in read.items()}, script_uses
    )
    return settled, needs, project


@dataclass
class _Survey:
    """The first pass's items, the package top of each file read for its facts, and the
    scripts read for their imports."""

    items: list[SurveyItem]
    tops: dict[str, str]
    scripts: set[str]


def _survey_items(
    files: list[SourceFile], discovery: Discovery, cache: ScanCache, stats: dict, options: ScanOptions
) -> _Survey:
    """One item per file to read in the first pass: the files the cache may not hold (by
    size and mtime: a hint until the project is known), and the package files discovery
    must read; a file that is both is read once."""
    tops = {name: top for top, names in discovery.to_read.items() for name in names}
    items: list[SurveyItem] = []
    scans: dict[str, WorkItem] = {}
    for sf in files:
        if not cache.seen(sf.rel, stats[sf.rel]):
            target = options.targets.for_path(sf.rel)
            scans[os.fspath(sf.path)] = WorkItem(str(sf.path), sf.rel, sf.kind, None, target)
    configured = options.device_helper
    for name, top in tops.items():
        items.append(SurveyItem(name, scans.pop(name, None), top, configured))
    for name in discovery.scripts:
        items.append(SurveyItem(name, scans.pop(name, None), script=True))
    items.extend(SurveyItem(name, item) for name, item in scans.items())
    return _Survey(items, tops, set(discovery.scripts))


class _Progress:
    def __init__(self, callback: Callable[[int, int], None] | None, total: int):
        self.callback, self.total, self.done = callback, total, 0

    def add(self, n: int) -> None:
        self.done += n
        if self.callback and n:
            self.callback(self.done, self.total)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _store(result: ScanResult, cache: ScanCache, res: FileResult, real: str) -> None:
    findings, error = res.findings, res.error
    cached = findings is None and res.error is None
    if cached:  # same content as the cached scan
        old = cache.entries[res.rel]
        findings, error = old.findings, old.error
    _collect(
        result,
        FileRecord(res.path, res.kind, res.digest, cached=cached, real=real),
        res.rel,
        findings or [],
        error,
    )
    if res.size >= 0:
        cache.store(res.rel, Entry(res.size, res.mtime_ns, res.digest, findings or [], error))


def _collect(
    result: ScanResult, record: FileRecord, rel: str, findings: list[Finding], error: str | None
) -> None:
    result.files[rel] = record
    result.findings.extend(findings)
    if error:
        result.errors.append(FileError(rel, error))
