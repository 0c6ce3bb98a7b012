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

from migrate.core import reads
from migrate.core.errors import FileProblem
from migrate.core.findings import FileError, FileRecord, Finding, ScanResult
from migrate.core.rules import Rule, default_rules, select_rules
from migrate.core.targets import TargetChoice
from migrate.scan.cache import Entry, ScanCache
from migrate.scan.discover import Walker, scan_root
from migrate.scan.parallel import PARALLEL_THRESHOLD
from migrate.scan.project import discover
from migrate.scan.readers import scan_text
from migrate.scan.ruleset import RuleSet
from migrate.scan.worker import FileResult, WorkItem, run_items

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
    project = discover(
        [(Path(sf.path), sf.rel) for sf in files if sf.kind == "python"],
        root,
        options.device_helper,
        # apply (trust_mtime off) reads every package afresh, as it reads every file
        options.cache_dir if options.trust_mtime and not custom else None,
        options.jobs,
    )
    cache = (
        ScanCache(None)
        if custom
        else ScanCache.open(
            options.cache_dir, root, [*(r.code for r in rules), options.targets.key(), project.key()], rules
        )
    )
    result = ScanResult(
        errors=list(walker.errors),
        files_scanned=len(files),
        target=options.targets.describe(),
        project=project,
        roots=[] if options.follow_symlinks else list(walker.roots),
    )
    reals = {sf.rel: sf.real for sf in files}
    todo: list[WorkItem] = []
    for sf in files:
        reads.file(sf.path)  # read here or by a worker
        hit = cache.lookup(sf.rel, _stat(sf.path)) if options.trust_mtime else None
        if hit is not None:
            _collect(
                result,
                FileRecord(str(sf.path), sf.kind, hit.digest, cached=True, real=sf.real),
                sf.rel,
                hit.findings,
                hit.error,
            )
            continue
        known = cache.entries[sf.rel].digest if sf.rel in cache.entries else None
        todo.append(
            WorkItem(
                str(sf.path),
                sf.rel,
                sf.kind,
                known,
                options.targets.for_path(sf.rel),
                project.for_file(sf.rel),
            )
        )
    for res in run_items(todo, RuleSet(rules), options.jobs, PARALLEL_THRESHOLD, options.progress):
        _store(result, cache, res, reals.get(res.rel, ""))
    cache.save({sf.rel for sf in files})
    result.findings.sort(key=Finding.sort_key)
    result.errors.sort(key=lambda e: e.path)
    return result


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
