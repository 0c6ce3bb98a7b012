"""Rewrite one file: fix passes to a fixpoint, optional annotations, verification, write.

A rewritten Python file must compile and parse with libcst, or it is not written and the
file becomes an error entry. Files without edits are never written (byte-identical).

The file is read and written under an advisory lock (two runs cannot interleave on it).
The scan's findings are used only if the bytes read now hash to the digest the scan
recorded; otherwise the file is scanned again first. Just before the atomic replace the
file is read once more: if it changed, nothing is written (see core/fileio.py).

`migrate apply` first makes every outcome without writing (``rewrite_file`` with
write=False), then writes them with ``commit_file`` (fix/transaction.py decides the order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from migrate.core.errors import FileProblem
from migrate.core.fileio import (
    Place,
    SourceError,
    SourceFile,
    encode_text,
    locked,
    read_source,
    write_source,
)
from migrate.core.findings import Finding
from migrate.core.rules import Rule
from migrate.core.targets import TargetChoice
from migrate.fix.annotate import annotate, strip_annotations
from migrate.fix.applier import AppliedEdit, apply_fixes
from migrate.fix.hoist import helper_calls, hoist
from migrate.fix.prune import drop_unused_torch
from migrate.fix.reformat import keep_formatted, line_limit
from migrate.fix.verify import verify_python
from migrate.scan.ruleset import RuleSet

MAX_PASSES = 5
Rules = RuleSet | Sequence[Rule]  # a RuleSet compiled once, or rules compiled per scan
ScanFn = Callable[[str, str, str, Rules], list[Finding]]


@dataclass
class Options:
    unsafe: bool = False
    annotate: bool = False
    strip: bool = False  # only remove annotations
    write: bool = True
    targets: TargetChoice = field(default_factory=TargetChoice)
    force: bool = False  # rewrite read-only files too


@dataclass
class Outcome:
    path: Path
    rel: str
    old_text: str = ""
    new_text: str = ""
    edits: list[AppliedEdit] = field(default_factory=list)
    annotated: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)  # findings on the new text
    stripped: int = 0
    error: str | None = None
    written: bool = False
    warnings: list[str] = field(default_factory=list)
    created: bool = False  # a new file (the device helper module of a package)
    bom: str = ""  # "\ufeff" when the file starts with a UTF-8 BOM (diffs show the bytes)
    digest: str = ""  # content hash of the bytes new_text was made from

    @property
    def changed(self) -> bool:
        return self.error is None and self.new_text != self.old_text


def fix_text(
    text: str,
    rel: str,
    kind: str,
    rules: Rules,
    scan: ScanFn,
    *,
    unsafe: bool,
    first: list[Finding] | None = None,
) -> tuple[str, list[AppliedEdit], list[Finding], str | None]:
    """Fix passes until nothing changes: (text, edits, findings on the text, error)."""
    try:
        findings = first if first is not None else scan(text, rel, kind, rules)
    except FileProblem as exc:
        return text, [], [], str(exc)
    edits: list[AppliedEdit] = []
    for _ in range(MAX_PASSES):
        try:
            new_text, applied = apply_fixes(text, findings, unsafe=unsafe, path=rel)
        except SyntaxError as exc:
            return text, [], findings, _refusal(applied_rules(findings, unsafe), exc.msg)
        if not applied or new_text == text:
            break
        try:  # the re-scan parses the new text: a fix that breaks it stops here
            new_findings = scan(new_text, rel, kind, rules)
        except FileProblem as exc:
            rules_used = sorted({a.rule for a in applied})
            return text, [], findings, _refusal(rules_used, str(exc))
        text, edits, findings = new_text, edits + applied, new_findings
    return text, edits, findings, None


def applied_rules(findings: list[Finding], unsafe: bool) -> list[str]:
    return sorted({f.rule for f in findings if f.fix and (unsafe or f.fix.applicability == "safe")})


def _refusal(rules: list[str], why: str) -> str:
    by = ", ".join(rules) or "?"
    return f"not written: fixes by {by} produce code that does not parse ({why})"


def rewrite_file(
    path: Path,
    rel: str,
    kind: str,
    rules: Rules,
    scan: ScanFn,
    options: Options,
    first: list[Finding] | None = None,
    digest: str | None = None,
    place: Place | None = None,
) -> Outcome:
    """Rewrite ``path`` (the path the scan opened). ``first``: the scan's findings, valid
    for the bytes with content hash ``digest`` (None: trust them as they are). ``place``:
    where the file may be read and written (checked again at write time)."""
    why = _unplaced(path, place)
    if why is not None:
        return Outcome(path, rel, error=why)
    with locked(path):
        source = _source(path, kind, place)
        if isinstance(source, str):
            return Outcome(path, rel, error=source)
        if digest is not None and source.digest != digest:
            first = None  # the file changed since the scan: its offsets no longer hold
        out = _compute(source, rel, kind, rules, scan, options, first)
        if out.error or not out.changed:
            return out
        return _store(out, source, options)


def commit_file(
    out: Outcome,
    kind: str,
    rules: Rules,
    scan: ScanFn,
    options: Options,
    place: Place | None = None,
    ready: Callable[[Outcome], str | None] = lambda out: None,
) -> Outcome:
    """Write the new text of ``out`` (made with write=False) under the file's lock. If the
    file's bytes are no longer those the text was made from, it is rewritten again from
    what it holds now. ``ready(outcome)`` runs just before the write: an error message
    there (e.g. its helper module could not be made) stops it."""
    why = _unplaced(out.path, place)
    if why is not None:
        return _refused(out, why)
    with locked(out.path):
        source = _source(out.path, kind, place)
        if isinstance(source, str):
            return _refused(out, source)
        if source.digest != out.digest:  # changed since it was rewritten: again, from now
            out = _compute(source, out.rel, kind, rules, scan, options, None)
            if out.error or not out.changed:
                return out
        problem = ready(out)
        if problem:
            return _refused(out, problem)
        return _store(out, source, options)


def _unplaced(path: Path, place: Place | None) -> str | None:
    """Why ``path`` may not be read and written where it is (None: it may)."""
    try:
        (place or Place()).resolve(path)
    except SourceError as exc:
        return str(exc)
    return None


def _source(path: Path, kind: str, place: Place | None) -> SourceFile | str:
    """The file as read now, or why it cannot be."""
    try:
        return read_source(path, python=kind == "python", place=place or Place())
    except SourceError as exc:
        return str(exc)


def _refused(out: Outcome, why: str) -> Outcome:
    out.error = why
    return out


def _compute(
    source: SourceFile,
    rel: str,
    kind: str,
    rules: Rules,
    scan: ScanFn,
    options: Options,
    first: list[Finding] | None,
) -> Outcome:
    """The outcome of rewriting the text of ``source`` (nothing written)."""
    path = source.path
    out = Outcome(path, rel, digest=source.digest)
    out.old_text = text = source.text
    if source.encoding == "utf-8-sig" and source.raw.startswith(b"\xef\xbb\xbf"):
        out.bom = "\ufeff"
    if options.strip:
        text, out.stripped = strip_annotations(text, kind)
    else:
        text, out.edits, findings, out.error = fix_text(
            text, rel, kind, rules, scan, unsafe=options.unsafe, first=first
        )
        if out.error:
            return out
        out.remaining = findings
        if options.annotate:
            text, out.annotated = annotate(text, findings, kind)
        if kind == "python" and out.edits:  # after the annotations: they point at lines
            limit = line_limit(path, out.old_text)
            text = hoist(out.old_text, text, helper_calls([e.after for e in out.edits]), limit)
            text = drop_unused_torch(out.old_text, text)
            text = keep_formatted(path, out.old_text, text, limit)
    out.new_text = text
    if text != out.old_text and kind == "python":
        problem = verify_python(text, rel, out.old_text)
        if problem:
            out.error = f"not written: {problem}"
    return out


def _store(out: Outcome, source: SourceFile, options: Options) -> Outcome:
    """Write (or with write=False: check that it can be encoded) the new text of ``out``."""
    notes: list[str] = []
    try:
        if options.write:
            out.written = write_source(source, out.new_text, force=options.force, notes=notes)
        else:
            encode_text(source, out.new_text)
    except (SourceError, OSError) as exc:
        out.error = f"not written: {getattr(exc, 'strerror', None) or exc}"
        return out
    out.warnings = notes
    if source.st is not None and source.st.st_nlink > 1:
        verb = "was" if out.written else "would be"
        out.warnings.append(
            f"has {source.st.st_nlink} hard links; only this name {verb} "
            "rewritten (the other links keep the old content)"
        )
    return out
