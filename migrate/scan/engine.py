"""The scan engine: files -> findings.

    scan_text(text, rel, file_kind, rules) -> list[Finding]
        Findings (with fixes) for one file's decoded text.
    scan_paths(paths, options) -> ScanResult
        Discovery, prefilter, parallel parse, cache; never raises on bad files.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from migrate.core.findings import FileError, Finding, ScanResult
from migrate.core.kinds import kinds_of
from migrate.core.rules import Rule, default_rules, select_rules
from migrate.scan.cache import Entry, ScanCache, content_hash
from migrate.scan.decode import DecodeError, decode_source
from migrate.scan.discover import SourceFile, Walker, scan_root
from migrate.scan.python.kinds import rules_for_path
from migrate.scan.python.notebook import NotebookError, scan_notebook
from migrate.scan.python.prefilter import python_prefilter
from migrate.scan.python.scanner import ParseError, scan_python

MAX_FILE_BYTES = 32 * 1024 * 1024
PARALLEL_THRESHOLD = 200  # files before worker processes pay off


@dataclass
class ScanOptions:
    select: list[str] | None = None
    ignore: list[str] | None = None
    extend_select: list[str] | None = None
    exclude: list[str] = field(default_factory=list)
    jobs: int | None = None
    cache_dir: Path | None = None  # None: no cache
    respect_gitignore: bool = True
    progress: Callable[[int, int], None] | None = None
    rules: Sequence[Rule] | None = None  # default: the shipped rules, filtered by select/ignore


class FileProblem(Exception):
    pass


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


def scan_text(text: str, rel: str, file_kind: str, rules: Sequence[Rule]) -> list[Finding]:
    """Findings of ``rules`` for one decoded file. Raises FileProblem for unparsable input."""
    rules, keep = with_shadows(rules)
    found = _scan_text(text, rel, file_kind, rules)
    return found if keep is None else [f for f in found if f.rule in keep]


def _scan_text(text: str, rel: str, file_kind: str, rules: Sequence[Rule]) -> list[Finding]:
    if file_kind in ("python", "notebook"):
        rules = rules_for_path(rules, rel)
    if file_kind == "python":
        try:
            return scan_python(text, rel, rules)
        except ParseError as exc:
            raise FileProblem(str(exc)) from None
    try:
        from migrate.scan.text import scanner as textfiles
    except ImportError:  # pragma: no cover
        return []
    return textfiles.scan_text_file(text, rel, file_kind, rules)


_OVERRIDE: dict[tuple[str, ...], tuple[Rule, ...]] = {}


@lru_cache(maxsize=4)
def _rules_for(codes: tuple[str, ...]) -> tuple[Rule, ...]:
    if codes in _OVERRIDE:
        return _OVERRIDE[codes]
    wanted = set(codes)
    return tuple(r for r in default_rules() if r.code in wanted)


def _read(path: str):
    """(stat, bytes) or (None, error message)."""
    try:
        st = os.stat(path)
        if st.st_size > MAX_FILE_BYTES:
            return st, f"file too large ({st.st_size} bytes); skipped"
        with open(path, "rb") as fh:
            return st, fh.read()
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"


def scan_file(item: tuple[str, str, str, tuple[str, ...]]) -> tuple[list[Finding], str | None]:
    """(path, rel, kind, codes) -> (findings, error). Never raises."""
    path, rel, kind, codes = item
    st, data = _read(path)
    if not isinstance(data, bytes):
        return [], data
    return _scan_data(Path(path), data, rel, kind, _rules_for(codes))


def _scan_data(path: Path, data: bytes, rel: str, kind: str, rules) -> tuple[list[Finding], str | None]:
    try:
        return _scan_bytes(path, data, rel, kind, rules), None
    except (FileProblem, DecodeError) as exc:
        return [], str(exc)
    except Exception as exc:  # a bug in a matcher must not end the scan
        return [], f"internal error: {type(exc).__name__}: {exc}"


def _scan_bytes(path: Path, data: bytes, rel: str, kind: str, rules: tuple[Rule, ...]) -> list[Finding]:
    if kind == "onnx":
        return _scan_onnx(path, rel, rules)
    if kind == "notebook":
        matching, keep = with_shadows(rules)
        try:
            found = scan_notebook(decode_source(data, python=False), rel, matching, scan_python)
            return found if keep is None else [f for f in found if f.rule in keep]
        except NotebookError as exc:
            raise FileProblem(str(exc)) from None
    text = decode_source(data, python=kind == "python")
    return scan_text(text, rel, kind, rules)


def _scan_onnx(path: Path, rel: str, rules) -> list[Finding]:
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


def scan_paths(paths: Sequence[Path], options: ScanOptions | None = None) -> ScanResult:
    options = options or ScanOptions()
    rules = list(options.rules) if options.rules is not None else select_rules(
        default_rules(), options.select, options.ignore, options.extend_select)
    codes = tuple(r.code for r in rules)
    if options.rules is not None:  # custom rule objects: scan in this process
        _OVERRIDE[codes] = tuple(rules)
        _rules_for.cache_clear()
        options = ScanOptions(**{**options.__dict__, "jobs": 1})
    paths = [Path(p) for p in paths]
    root = scan_root(paths)
    walker = Walker(root, options.exclude, options.respect_gitignore)
    files: list[SourceFile] = list(walker.walk(paths))
    cache = ScanCache.open(options.cache_dir, root, list(codes)) if options.rules is None else ScanCache(None)
    result = ScanResult(errors=list(walker.errors), files_scanned=len(files))
    todo: list[tuple] = []
    for sf in files:
        try:
            st = os.stat(sf.path)
        except OSError as exc:
            result.errors.append(FileError(sf.rel, f"cannot read: {exc.strerror or exc}"))
            continue
        hit = cache.lookup(sf.rel, st)
        if hit is not None:
            _collect(result, sf.rel, hit.findings, hit.error)
            continue
        todo.append(sf)
    for rel, size, mtime, digest, findings, error in _run(todo, options, cache, codes):
        _collect(result, rel, findings, error)
        if size >= 0:
            cache.store(rel, Entry(size, mtime, digest, findings, error))
    cache.save({sf.rel for sf in files})
    result.findings.sort(key=Finding.sort_key)
    result.errors.sort(key=lambda e: e.path)
    return result


def _collect(result: ScanResult, rel: str, findings: list[Finding], error: str | None) -> None:
    result.findings.extend(findings)
    if error:
        result.errors.append(FileError(rel, error))


def _run(todo: list[SourceFile], options: ScanOptions, cache: ScanCache, codes: tuple[str, ...]):
    """Yields (rel, size, mtime, digest, findings, error) for every file in ``todo``.

    Each file is read, hashed and prefiltered, and parsed only if it may have findings.
    Large trees are split into interleaved chunks handled by worker processes."""
    items = [(str(sf.path), sf.rel, sf.kind,
              cache.entries[sf.rel].digest if sf.rel in cache.entries else None) for sf in todo]
    total = len(items)
    jobs = options.jobs or os.cpu_count() or 1
    progress = options.progress
    if jobs <= 1 or total < PARALLEL_THRESHOLD:
        outs = (_process_chunk((items[i:i + 64], codes)) for i in range(0, total, 64))
        yield from _reuse(outs, cache, progress, total)
        return
    n = jobs * 8
    chunks = [(items[i::n], codes) for i in range(n) if items[i::n]]
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    with ctx.Pool(jobs) as pool:
        yield from _reuse(pool.imap_unordered(_process_chunk, chunks), cache, progress, total)


def _reuse(outs, cache: ScanCache, progress, total: int):
    done = 0
    for out in outs:
        for rel, size, mtime, digest, findings, error in out:
            if findings is None:  # content unchanged, only the mtime moved
                old = cache.entries[rel]
                findings, error = old.findings, old.error
            yield rel, size, mtime, digest, findings, error
        done += len(out)
        if progress:
            progress(done, total)


def _process_chunk(args) -> list[tuple]:
    items, codes = args
    rules = _rules_for(codes)
    out = []
    prefilters: dict[int, object] = {}  # by rule selection (rules_for_path memoises them)
    for path, rel, kind, known in items:
        selected = rules_for_path(rules, rel)
        if id(selected) not in prefilters:
            prefilters[id(selected)] = python_prefilter(selected)
        prefilter = prefilters[id(selected)]
        st, data = _read(path)
        if not isinstance(data, bytes):
            out.append((rel, st.st_size if st else -1, st.st_mtime_ns if st else -1, "", [], data))
            continue
        digest = content_hash(data)
        if digest == known:
            out.append((rel, st.st_size, st.st_mtime_ns, digest, None, None))
        elif kind in ("python", "notebook") and prefilter is not None and not prefilter.search(data):
            out.append((rel, st.st_size, st.st_mtime_ns, digest, [], None))
        else:
            findings, error = _scan_data(Path(path), data, rel, kind, rules)
            out.append((rel, st.st_size, st.st_mtime_ns, digest, findings, error))
    return out
