"""`migrate apply` over a scan result: which files to rewrite, and the run's totals.

The scan (parallel, cached) gives the first pass's findings; only files with something
to do are read again and rewritten, each to a fixpoint (see rewrite.py).
"""

from __future__ import annotations

import multiprocessing
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from migrate.core.findings import FileError, Finding, ScanResult
from migrate.core.rules import Rule
from migrate.fix.applier import fixable
from migrate.fix.rewrite import Options, Outcome, rewrite_file

NOT_REWRITTEN = ("onnx", "notebook")  # reported by scan, never edited by apply
PARALLEL_THRESHOLD = 6  # files to rewrite before worker processes pay off


def engine_scan(text: str, rel: str, kind: str, rules: list[Rule]) -> list[Finding]:
    from migrate.scan.engine import FileProblem, scan_text

    try:
        return scan_text(text, rel, kind, rules)
    except FileProblem as exc:
        raise SyntaxError(str(exc)) from None


@dataclass
class ApplyRun:
    outcomes: list[Outcome] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)  # findings left after the run
    files_scanned: int = 0

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
        return {r: {"name": names[r], "edits": edits[r], "files": len(files[r])}
                for r in sorted(edits)}

    def summary(self) -> dict:
        changed = self.changed
        return {
            "files_scanned": self.files_scanned,
            "files_changed": len(changed),
            "edits": sum(len(o.edits) for o in changed),
            "annotations": sum(len(o.annotated) for o in changed),
            "annotations_removed": sum(o.stripped for o in changed),
            "errors": len(self.errors),
            "refused": sum(1 for o in self.outcomes if o.error),
            "remaining": len(self.remaining),
            "by_rule": self.by_rule(),
        }


def _kind(path: Path) -> str | None:
    from migrate.scan.discover import file_kind

    return file_kind(path)


def _wanted(findings: list[Finding], options: Options) -> bool:
    if any(fixable(f, options.unsafe) for f in findings):
        return True
    return options.annotate and any(f.category == "manual" for f in findings)


def apply_scan(result: ScanResult, root: Path, rules: list[Rule], options: Options,
               annotated_files: list[tuple[Path, str, str]] = (),
               jobs: int | None = None) -> ApplyRun:
    """Rewrite the files of ``result`` (or, with options.strip, ``annotated_files``)."""
    run = ApplyRun(errors=list(result.errors), files_scanned=result.files_scanned)
    by_file: dict[str, list[Finding]] = {}
    for f in result.findings:
        by_file.setdefault(f.path, []).append(f)
    if options.strip:
        todo = [(path, rel, kind, None) for path, rel, kind in annotated_files]
    else:
        todo = []
        for rel, findings in by_file.items():
            path = root / rel
            kind = _kind(path)
            if kind and kind not in NOT_REWRITTEN and _wanted(findings, options):
                todo.append((path, rel, kind, findings))
            else:
                run.remaining.extend(findings)
    for (_, _, _, findings), out in zip(todo, _rewrite_all(todo, rules, options, jobs),
                                        strict=True):
        run.outcomes.append(out)
        if out.error:
            run.errors.append(FileError(out.rel, out.error))
            run.remaining.extend(findings or [])
        else:
            run.remaining.extend(out.remaining)
    return run


_WORK: tuple | None = None  # (rules, options) inherited by forked workers


def _rewrite_one(item) -> Outcome:
    path, rel, kind, findings = item
    rules, options = _WORK
    try:
        return rewrite_file(path, rel, kind, rules, engine_scan, options, first=findings)
    except Exception as exc:  # a bug in a fixer must not end the run
        return Outcome(path, rel, error=f"internal error: {type(exc).__name__}: {exc}")


def _rewrite_all(todo: list, rules: list[Rule], options: Options, jobs: int | None):
    """Rewrite files, in worker processes when there are enough to pay for them."""
    global _WORK
    _WORK = (rules, options)
    jobs = jobs or os.cpu_count() or 1
    methods = multiprocessing.get_all_start_methods()
    if jobs <= 1 or len(todo) < PARALLEL_THRESHOLD or "fork" not in methods:
        return [_rewrite_one(item) for item in todo]
    with multiprocessing.get_context("fork").Pool(min(jobs, len(todo))) as pool:
        return pool.map(_rewrite_one, todo, chunksize=1)
