"""`migrate apply` over a scan result: which files to rewrite, and the run's totals.

The scan (parallel, cached) gives the first pass's findings; only files with something
to do are read again and rewritten, each to a fixpoint (see rewrite.py), all of them
before anything is written; then helper modules and files are written in the order
fix/transaction.py gives.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from migrate.core.errors import too_deep
from migrate.core.fileio import Place
from migrate.core.filekinds import FILE_KINDS
from migrate.core.filelock import LockTimeout
from migrate.core.findings import FileError, Finding, ScanResult
from migrate.core.rules import Rule
from migrate.core.targets import DEFAULT_TARGET
from migrate.fix.applier import fixable
from migrate.fix.rewrite import Options, Outcome, commit_file, rewrite_file
from migrate.fix.transaction import commit_all
from migrate.scan.parallel import can_fork, clamp_jobs
from migrate.scan.readers import scan_text
from migrate.scan.ruleset import RuleSet

PARALLEL_THRESHOLD = 6  # files to rewrite before worker processes pay off


def engine_scan(
    text: str, rel: str, kind: str, rules: RuleSet | list[Rule], target: str = DEFAULT_TARGET, devices=None
) -> list[Finding]:
    """The scan engine on one text (raises FileProblem when the text cannot be scanned)."""
    return scan_text(text, rel, kind, rules, target, devices)


@dataclass(frozen=True)
class ApplyItem:
    """One file to rewrite: the path the scan opened and what it found in which bytes."""

    path: Path
    rel: str
    kind: str
    findings: list[Finding] | None  # None: scan the file first (--strip-annotations, cache)
    digest: str | None = None  # content hash of the bytes the findings point into
    devices: object = None  # the project around it (migrate/scan/project/file_devices.py FileDevices)
    place: Place | None = None  # where it may be written (resolved path, scan roots)


@dataclass
class ApplyRun:
    outcomes: list[Outcome] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)  # findings left after the run
    files_scanned: int = 0
    root: Path | None = None  # the folder the reported paths are relative to

    @property
    def changed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.changed]

    def by_rule(self) -> dict[str, dict]:
        edits: Counter[str] = Counter()
        files: dict[str, set[str]] = {}
        names: dict[str, str] = {}
        for o in self.changed:
            for e in o.edits:
                edits[e.rule] += 1
                files.setdefault(e.rule, set()).add(o.rel)
                names[e.rule] = e.name
        return {r: {"name": names[r], "edits": edits[r], "files": len(files[r])} for r in sorted(edits)}

    def summary(self) -> dict:
        changed = self.changed
        return {
            "files_scanned": self.files_scanned,
            "files_changed": len(changed),
            "files_created": sum(1 for o in changed if o.created),
            "edits": sum(len(o.edits) for o in changed),
            "annotations": sum(len(o.annotated) for o in changed),
            "annotations_removed": sum(o.stripped for o in changed),
            "errors": len(self.errors),
            "refused": sum(1 for o in self.outcomes if o.error),
            "remaining": len(self.remaining),
            "by_rule": self.by_rule(),
        }


def _wanted(findings: list[Finding], options: Options) -> bool:
    if any(fixable(f, options.unsafe) for f in findings):
        return True
    return options.annotate and any(f.category == "manual" for f in findings)


def apply_scan(
    result: ScanResult,
    root: Path,
    rules: list[Rule],
    options: Options,
    annotated_files: Sequence[tuple[Path, str, str]] = (),
    jobs: int | None = None,
) -> ApplyRun:
    """Rewrite the files of ``result`` (or, with options.strip, ``annotated_files``)."""
    run = ApplyRun(errors=list(result.errors), files_scanned=result.files_scanned, root=root)
    by_file: dict[str, list[Finding]] = {}
    for f in result.findings:
        by_file.setdefault(f.path, []).append(f)
    within = tuple(result.roots)
    if options.strip:
        todo = [
            ApplyItem(path, rel, kind, None, place=Place("", within)) for path, rel, kind in annotated_files
        ]
    else:
        todo = []
        for rel, findings in by_file.items():
            record = result.files.get(rel)
            if record is None:  # no file of this scan: never a path joined from a finding
                run.remaining.extend(findings)
                continue
            if FILE_KINDS[record.kind].rewritable and _wanted(findings, options):
                # Cached findings are data, not edits: their file is scanned again.
                devices = result.project.for_file(rel) if result.project else None
                todo.append(
                    ApplyItem(
                        Path(record.path),
                        rel,
                        record.kind,
                        None if record.cached else findings,
                        record.digest,
                        devices=devices,
                        place=Place(record.real, within),
                    )
                )
            else:
                run.remaining.extend(findings)
    ruleset = RuleSet(rules)
    outcomes = _rewrite_all(todo, ruleset, replace(options, write=False), jobs)
    project = None if options.strip else result.project
    helpers: list[Outcome] = []
    if options.write:  # helper modules first, then the files that import them
        rewriter = Rewriter(ruleset, options)
        outcomes, helpers = commit_all(
            outcomes, project, lambda i, out, ready: rewriter.commit(todo[i], out, ready)
        )
    for item, out in zip(todo, outcomes, strict=True):
        run.outcomes.append(out)
        if out.error:
            run.errors.append(FileError(out.rel, out.error))
            run.remaining.extend(item.findings or [])
        else:
            run.remaining.extend(out.remaining)
    if not options.write and project is not None:
        helpers = _helper_modules(run.outcomes, project)
    for out in helpers:
        run.outcomes.append(out)
        if out.error:
            run.errors.append(FileError(out.rel, out.error))
    return run


def _helper_modules(outcomes: list[Outcome], project) -> list[Outcome]:
    """The helper modules a run that writes nothing would create or extend."""
    from migrate.fix import helper_module

    made = []
    for rel, (path, _module, type_from, names) in sorted(helper_module.needed(outcomes, project).items()):
        out = helper_module.create(path, rel, False, type_from, names)
        if out is not None:
            made.append(out)
    return made


class Rewriter:
    """Rewrites apply items with one rule selection and one set of options."""

    def __init__(self, rules: RuleSet | list[Rule], options: Options):
        self.rules, self.options = RuleSet.of(rules), options

    def __call__(self, item: ApplyItem) -> Outcome:
        """The outcome of rewriting ``item`` (written, unless options say not to)."""
        scan = self._scan(item)
        return _guarded(
            item,
            lambda: rewrite_file(
                item.path,
                item.rel,
                item.kind,
                self.rules,
                scan,
                self.options,
                first=item.findings,
                digest=item.digest,
                place=item.place,
            ),
        )

    def commit(self, item: ApplyItem, out: Outcome, ready) -> Outcome:
        """Write ``out`` (made by __call__ without writing); see commit_file."""
        scan = self._scan(item)
        options, place = self.options, item.place
        return _guarded(item, lambda: commit_file(out, item.kind, self.rules, scan, options, place, ready))

    def _scan(self, item: ApplyItem):
        return partial(engine_scan, target=self.options.targets.for_path(item.rel), devices=item.devices)


def _guarded(item: ApplyItem, work: Callable[[], Outcome]) -> Outcome:
    """``work()``, with a fixer's bug or a too-deep file as that file's error (the run goes
    on); a lock that was not had in time ends the run (exit 2)."""
    try:
        return work()
    except LockTimeout:
        raise
    except (RecursionError, MemoryError) as exc:
        return Outcome(item.path, item.rel, error=f"not written: {too_deep(exc)}")
    except Exception as exc:  # a bug in a fixer must not end the run
        return Outcome(item.path, item.rel, error=f"internal error: {type(exc).__name__}: {exc}")


_rewriter: Rewriter | None = None  # this worker process's Rewriter, set by the initializer


def _init_worker(rules: RuleSet, options: Options) -> None:
    global _rewriter
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    # An idle worker blocks in a semaphore wait: a Python-level SIGTERM handler that runs
    # between its try-acquire and the wait is lost and the worker never ends (the pool's
    # terminate() then waits forever). Idle workers just stop; a worker in the middle of a
    # rewrite unwinds, so its temporary file is removed.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _rewriter = Rewriter(rules, options)


def _unwind(signum, frame) -> None:
    raise SystemExit(128 + signum)


def _rewrite_in_worker(item: ApplyItem) -> Outcome:
    assert _rewriter is not None
    signal.signal(signal.SIGTERM, _unwind)
    try:
        return _rewriter(item)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _rewrite_all(
    todo: list[ApplyItem], ruleset: RuleSet, options: Options, jobs: int | None
) -> list[Outcome]:
    """Rewrite files, in worker processes when there are enough to pay for them; the rules
    are compiled once for all of them."""
    jobs = clamp_jobs(jobs, len(todo))
    if jobs <= 1 or len(todo) < PARALLEL_THRESHOLD or not can_fork():
        rewriter = Rewriter(ruleset, options)
        return [rewriter(item) for item in todo]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, initializer=_init_worker, initargs=(ruleset, options)) as pool:
        outcomes = pool.map(_rewrite_in_worker, todo, chunksize=1)
        pool.close()  # workers end on the pool's sentinel, not on a signal
        pool.join()
        return outcomes
