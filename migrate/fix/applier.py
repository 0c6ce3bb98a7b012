"""Apply fixes to one file's text: choose, merge, add imports, verify.

Fixes are chosen ruff style: in source order, skipping a fix whose edits overlap an edit
already chosen (the caller re-scans and applies again, up to a fixpoint). Edits that are
exactly equal are shared, so two fixes may insert the same helper at the same place.
Edit contents are written with "\\n"; in a CRLF file they become "\\r\\n".
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import asdict, dataclass

from migrate.core.fileio import newline_of
from migrate.core.findings import Edit, Finding, Fix, LineIndex, import_needed, splice
from migrate.core.import_placement import import_edits
from migrate.scan.library_checks import library_tops


@dataclass
class AppliedEdit:
    rule: str
    name: str
    path: str
    line: int  # 1-based, in the text the edit was made on
    before: str
    after: str
    description: str = ""

    def to_json(self) -> dict:
        """Every field, in order (the edits of `migrate apply --format json`)."""
        return asdict(self)


def fix_of(finding: Finding) -> Fix:
    """The fix of a finding chosen to apply (only findings with one are chosen)."""
    assert finding.fix is not None
    return finding.fix


def fixable(finding: Finding, unsafe: bool) -> bool:
    fix = finding.fix
    if fix is None or not (fix.edits or fix.imports):
        return False
    return fix.applicability == "safe" or unsafe


def _conflict(a: Edit, b: Edit) -> bool:
    if a == b:
        return False
    if a.start == a.end and b.start == b.end:
        return a.start == b.start  # two different insertions at one point: order unclear
    return a.start < b.end and b.start < a.end


def _self_consistent(edits: list[Edit]) -> bool:
    ordered = sorted(set(edits))
    return all(not _conflict(x, y) for x, y in zip(ordered, ordered[1:], strict=False))


class _Taken:
    """The edits chosen so far, sorted by offset, so an overlap check costs O(log n)."""

    def __init__(self) -> None:
        self.keys: list[tuple[int, int]] = []
        self.edits: list[Edit] = []
        self.members: set[Edit] = set()

    def conflicts(self, e: Edit) -> bool:
        lo = bisect.bisect_left(self.keys, (e.start, -1)) - 1
        hi = bisect.bisect_right(self.keys, (e.end, e.end + 1)) + 1
        return any(_conflict(e, t) for t in self.edits[max(lo, 0) : hi])

    def add(self, e: Edit) -> None:
        if e in self.members:
            return
        i = bisect.bisect_right(self.keys, (e.start, e.end))
        self.keys.insert(i, (e.start, e.end))
        self.edits.insert(i, e)
        self.members.add(e)


def choose(findings: list[Finding], *, unsafe: bool) -> list[Finding]:
    """The fixes to apply in one pass: non-overlapping, in source order. (Suppressed
    findings never reach here: the scan drops them.)"""
    candidates = []
    for f in findings:
        if not fixable(f, unsafe) or not _self_consistent(fix_of(f).edits):
            continue
        first = min((e.start for e in fix_of(f).edits), default=-1)
        candidates.append((first, f.line, f.column, f.rule, f))
    candidates.sort(key=lambda c: c[:4])
    chosen: list[Finding] = []
    taken = _Taken()
    for *_, f in candidates:
        if any(taken.conflicts(e) for e in fix_of(f).edits):
            continue
        chosen.append(f)
        for e in fix_of(f).edits:
            taken.add(e)
    return chosen


def _newlines(content: str, nl: str) -> str:
    if nl == "\n" or "\n" not in content:
        return content
    return content.replace("\r\n", "\n").replace("\n", nl)


def apply_fixes(
    text: str, findings: list[Finding], *, unsafe: bool, path: str = ""
) -> tuple[str, list[AppliedEdit]]:
    """One pass: the new text and the edits made. Imports go in after the edits.

    Raises SyntaxError if the edited text does not parse (it cannot take imports then).
    """
    chosen = choose(findings, unsafe=unsafe)
    if not chosen:
        return text, []
    nl = newline_of(text)
    lines = LineIndex(text)
    applied: list[AppliedEdit] = []
    edits: list[Edit] = []
    made: set[Edit] = set()
    for f in chosen:
        for e in fix_of(f).edits:
            e = Edit(e.start, e.end, _newlines(e.content, nl))
            if e in made:
                continue
            made.add(e)
            edits.append(e)
            applied.append(
                AppliedEdit(
                    f.rule,
                    f.name,
                    path or f.path,
                    lines.position(e.start)[0],
                    text[e.start : e.end],
                    e.content,
                    fix_of(f).description,
                )
            )
    new_text = splice(text, edits)
    wanted: list[tuple[str, Finding]] = []
    new_code = "\n".join(e.content for e in edits)
    judged: dict[str, bool] = {}  # each statement judged once: linear in findings
    for f in chosen:
        for s in fix_of(f).imports:
            if s not in judged:
                judged[s] = import_needed(s, new_code)
                if judged[s]:
                    wanted.append((s, f))
    if wanted:
        new_text, more = add_imports(new_text, wanted, edits, path)
        applied.extend(more)
    return new_text, applied


def add_imports(
    text: str, wanted: list[tuple[str, Finding]], edits: list[Edit], path: str
) -> tuple[str, list[AppliedEdit]]:
    tree = ast.parse(text)
    new_code = "\n".join(e.content for e in edits)
    made = import_edits(text, tree, [s for s, _ in wanted], new_code, library_tops())
    if not made:
        return text, []
    index = LineIndex(text)
    by_stmt = dict(wanted)
    first = wanted[0][1]
    applied = []
    for edit in made:
        line = index.position(edit.start)[0]
        for stmt in edit.content.replace("\r", "").split("\n"):
            if not stmt.strip():
                continue
            f = by_stmt.get(stmt.strip(), first)
            shown = (
                stmt.strip()
                if not stmt.startswith(", ")
                else text[index.starts[line - 1] : edit.start].strip() + stmt
            )
            applied.append(AppliedEdit(f.rule, f.name, path or f.path, line, "", shown, f"add `{shown}`"))
            line += 1
    return splice(text, made), applied
