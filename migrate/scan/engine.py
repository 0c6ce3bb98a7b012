"""The scan engine: files -> findings.

    scan_text(text, rel, file_kind, rules) -> list[Finding]
        Findings (with fixes) for one file's decoded text; FileProblem if it cannot be parsed.
    scan_paths(paths, options) -> ScanResult
        Discovery, cache, parallel read/decode/prefilter/parse (scan/worker.py); never
        raises on bad files. ``result.files`` records, per reported path, the path that was
        opened and the content hash of the bytes scanned: apply rewrites only those bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from migrate.core.findings import FileError, FileRecord, Finding, ScanResult
from migrate.core.rules import Rule, default_rules, select_rules
from migrate.core.targets import DEFAULT_TARGET, TargetChoice
from migrate.scan.cache import Entry, ScanCache
from migrate.scan.discover import Walker, scan_root
from migrate.scan.project import FileDevices, discover
from migrate.scan.python.kinds import rules_for_path
from migrate.scan.python.scanner import ParseError, scan_python
from migrate.core.errors import FileProblem
from migrate.scan.worker import FileResult, WorkItem, run_items

PARALLEL_THRESHOLD = 200  # files before worker processes pay off

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


def with_shadows(rules: Sequence[Rule]) -> tuple[tuple[Rule, ...], frozenset[str] | None]:
    """(rules to match with, codes to keep or None for all).

    ruff parity: ignoring a rule drops its findings, and no other rule takes them over.
    Rules of one kind share a table (longest match first), so an unselected shipped rule
    of a selected kind still matches, to claim its names, and its findings are dropped
    (``--ignore MIG101`` must not turn torch.cuda calls into MIG105 "unlisted" findings).
    Only for shipped rules: custom rule sets are matched as given."""
    return _shadows(tuple(rules))


@lru_cache(maxsize=16)
def _shadows(rules: tuple[Rule, ...]) -> tuple[tuple[Rule, ...], frozenset[str] | None]:
    shipped = default_rules()
    known = set(map(id, shipped))
    if not all(id(r) in known for r in rules) or len(rules) == len(shipped):
        return rules, None
    kinds = {r.kind for r in rules}
    codes = frozenset(r.code for r in rules)
    extra = tuple(r for r in shipped if r.kind in kinds and r.code not in codes)
    if not extra:
        return rules, None
    return tuple(sorted(rules + extra, key=lambda r: r.code)), codes


def scan_text(text: str, rel: str, file_kind: str, rules: Sequence[Rule],
              target: str = DEFAULT_TARGET, devices: FileDevices | None = None) -> list[Finding]:
    """Findings of ``rules`` for one decoded file, with fixes for ``target`` (portable fixes
    route through the ``devices`` helpers). Raises FileProblem for unparsable input."""
    rules, keep = with_shadows(rules)
    found = _scan_text(text, rel, file_kind, rules, target, devices)
    return found if keep is None else [f for f in found if f.rule in keep]


def _scan_text(text: str, rel: str, file_kind: str, rules: Sequence[Rule],
               target: str = DEFAULT_TARGET, devices: FileDevices | None = None) -> list[Finding]:
    if file_kind in ("python", "notebook"):
        rules = rules_for_path(rules, rel)
    if file_kind == "python":
        try:
            return scan_python(text, rel, rules, target, devices)
        except ParseError as exc:
            raise FileProblem(str(exc)) from None
    from migrate.scan.text import scanner as textfiles
    from migrate.scan.text.targets import retarget_text

    return retarget_text(textfiles.scan_text_file(text, rel, file_kind, rules), text, rel,
                         file_kind, target)


def scan_paths(paths: Sequence[Path], options: ScanOptions | None = None) -> ScanResult:
    options = options or ScanOptions()
    custom = options.rules is not None
    rules = list(options.rules) if custom else select_rules(
        default_rules(), options.select, options.ignore, options.extend_select)
    paths = [Path(p) for p in paths]
    root = scan_root(paths)
    walker = Walker(root, options.exclude, options.respect_gitignore, options.follow_symlinks)
    files = list(walker.walk(paths))
    project = discover([(Path(sf.path), sf.rel) for sf in files if sf.kind == "python"], root,
                       options.device_helper)
    cache = ScanCache(None) if custom else ScanCache.open(
        options.cache_dir, root, [*(r.code for r in rules), options.targets.key(), project.key()])
    result = ScanResult(errors=list(walker.errors), files_scanned=len(files),
                        target=options.targets.describe(), project=project)
    todo: list[WorkItem] = []
    for sf in files:
        hit = cache.lookup(sf.rel, _stat(sf.path)) if options.trust_mtime else None
        if hit is not None:
            _collect(result, FileRecord(str(sf.path), sf.kind, hit.digest), sf.rel,
                     hit.findings, hit.error)
            continue
        known = cache.entries[sf.rel].digest if sf.rel in cache.entries else None
        todo.append(WorkItem(str(sf.path), sf.rel, sf.kind, known,
                             options.targets.for_path(sf.rel), project.for_file(sf.rel)))
    for res in run_items(todo, rules, scan_text, options.jobs, PARALLEL_THRESHOLD,
                         options.progress):
        _store(result, cache, res)
    cache.save({sf.rel for sf in files})
    result.findings.sort(key=Finding.sort_key)
    result.errors.sort(key=lambda e: e.path)
    return result


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _store(result: ScanResult, cache: ScanCache, res: FileResult) -> None:
    findings, error = res.findings, res.error
    if findings is None and res.error is None:  # same content as the cached scan
        old = cache.entries[res.rel]
        findings, error = old.findings, old.error
    _collect(result, FileRecord(res.path, res.kind, res.digest), res.rel, findings or [], error)
    if res.size >= 0:
        cache.store(res.rel, Entry(res.size, res.mtime_ns, res.digest, findings or [], error))


def _collect(result: ScanResult, record: FileRecord, rel: str, findings: list[Finding],
             error: str | None) -> None:
    result.files[rel] = record
    result.findings.extend(findings)
    if error:
        result.errors.append(FileError(rel, error))
