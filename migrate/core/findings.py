"""Findings: what a scan reports, and the fixes that `apply` makes.

A Finding has a rule code, a location (1-based line and column, end exclusive), a
category and optionally a Fix. A Fix is a list of text Edits on the file's text
(character offsets, not bytes) plus the imports the edited code needs.

Fixes are decided once, where the finding is built (``fix_for``: applicability from the
rule's category, the description, the edits, the imports); both are frozen. A pass that
runs after matching (NPU-aware code, transfer_to_npu, statements held back, CI jobs on
NVIDIA runners) makes a new finding with one of the methods below, never edits one, so
what a report describes is what ``migrate apply`` writes. Categories:

* ``auto``     — a safe fix exists; ``migrate apply`` makes it by default.
* ``assisted`` — a fix exists but may change behaviour; applied with ``--unsafe-fixes``.
* ``manual``   — a person must act.
* ``perf``     — optional NPU-affinity advice (a fused kernel or optimizer, a runtime
  setting): never required work, off the ``--fail-on`` ladder unless asked for.

Impacts (what happens on an NPU if the code is left as it is; SARIF and GitHub levels
follow it): ``crash`` (error), ``behaviour`` (warning: runs, but differently or on the
CPU), ``noop`` (note: harmless) and ``perf`` (note: runs, could run faster).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Category = Literal["auto", "assisted", "manual", "perf"]
CATEGORIES: tuple[Category, ...] = ("auto", "assisted", "manual", "perf")
REQUIRED: tuple[Category, ...] = ("auto", "assisted", "manual")  # work a port must do
# Order used by --fail-on: a finding at or above the threshold fails the run. perf sits
# below the ladder: it fails a run only with `--fail-on perf`.
CATEGORY_RANK = {"perf": -1, "auto": 0, "assisted": 1, "manual": 2}
IMPACTS = ("crash", "behaviour", "noop", "perf")


@dataclass(frozen=True, slots=True, order=True)
class Edit:
    """Replace text[start:end] (character offsets into the file's text) by ``content``."""

    start: int
    end: int
    content: str


@dataclass(frozen=True, slots=True)
class Fix:
    applicability: Literal["safe", "unsafe"]
    description: str
    edits: list[Edit] = field(default_factory=list)
    # Top-level imports the fixed code needs, as statements ("import torch_npu").
    imports: list[str] = field(default_factory=list)
    # 1-based (line, column, end_line, end_column) of each edit, set by ``locate``.
    ranges: list[tuple[int, int, int, int]] = field(default_factory=list)

    def locate(self, index: LineIndex) -> Fix:
        """This fix, with where each edit sits in the text ``index`` was built on."""
        return replace(self, ranges=[(*index.position(e.start), *index.position(e.end)) for e in self.edits])

    def held_back(self) -> Fix:
        """This fix, made only with --unsafe-fixes (a statement must not be left half ported)."""
        return replace(self, applicability="unsafe")

    def edits_json(self) -> list[dict]:
        return [
            {"line": r[0], "column": r[1], "end_line": r[2], "end_column": r[3], "content": e.content}
            for e, r in zip(self.edits, self.ranges)
        ]

    def to_json(self) -> dict:
        return {
            "applicability": self.applicability,
            "description": self.description,
            "edits": self.edits_json(),
            "imports": list(self.imports),
        }


@dataclass(frozen=True)
class Draft:
    """What a fixer (migrate/scan/python/fixers) proposes: what its edits write, the edits,
    and the imports they need. ``fix_for`` turns it into the rule's Fix."""

    description: str
    edits: list[Edit]
    imports: list[str] = field(default_factory=list)


def fix_for(
    rule, edits: list[Edit], values: dict, imports: list[str] | None = None, *, description: str | None = None
) -> Fix:
    """The fix of a ``rule`` (a migrate.core.rules.Rule): safe for an auto rule, unsafe for
    an assisted one; described by the rule's fix title filled with ``values`` unless the
    edits write something else (a portable form, a fixer's helper): then ``description``
    says what they write. The one place a fix's applicability, description and imports
    are decided (tests/meta/test_fix_truth.py checks every description against its edits)."""
    written = "\n".join(e.content for e in edits)
    return Fix(
        applicability="safe" if rule.category == "auto" else "unsafe",
        description=description if description is not None else rule.format_fix_title(**values),
        edits=edits,
        imports=[s for s in dict.fromkeys([*rule.imports, *(imports or [])]) if import_needed(s, written)],
    )


_NAMES_TORCH_NPU = re.compile(r"(?<![\w.])torch_npu\b")


def import_needed(statement: str, new_code: str) -> bool:
    """`import torch_npu` only where the new code names torch_npu: torch_npu >= 2.5 loads
    itself with `import torch` (a torch.backends entry point), so torch.npu needs no import.
    (A fix lists only the imports its edits need; apply adds only those the pass needs.)"""
    if statement.strip() == "import torch_npu":
        code = "\n".join(
            line for line in new_code.splitlines() if not line.lstrip().startswith(("import ", "from "))
        )
        return bool(_NAMES_TORCH_NPU.search(code))
    return True


def finding_category(rule, fix: Fix | None) -> Category:
    """A finding's category: the rule's, but ``manual`` where this occurrence has no fix
    (the report must not send it to `migrate apply`); perf advice stays perf, fix or not.
    Every engine derives it here."""
    if rule.category == "perf":
        return "perf"
    return rule.category if fix is not None else "manual"


def finding_at(
    rule, index: LineIndex, path: str, start: int, end: int, values: dict[str, Any], fix: Fix | None, **more
) -> Finding:
    """The finding of ``rule`` on text[start:end] of the file ``index`` holds: positions,
    message, category, snippet and the fix located, as every engine builds it. ``more``:
    the fields only some engines know (symbol, guarded, target, decision)."""
    line, col = index.position(start)
    end_line, end_col = index.position(max(end, start))
    if fix is not None:
        fix = fix.locate(index)
    snippet, snippet_start = index.snippet(line, col)
    return Finding(
        rule=rule.code,
        name=rule.name,
        path=path,
        line=line,
        column=col,
        end_line=end_line,
        end_column=end_col,
        message=rule.format_message(**values),
        category=finding_category(rule, fix),
        fix=fix,
        snippet=snippet,
        snippet_start=snippet_start,
        impact=rule.impact,
        **more,
    )


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str  # stable code, e.g. MIG101
    name: str  # kebab-case rule name
    path: str  # as given/relative to the scan root, with forward slashes
    line: int  # 1-based
    column: int  # 1-based
    end_line: int
    end_column: int
    message: str
    category: Category
    fix: Fix | None = None
    # A window of the source line (at most SNIPPET_MAX characters around the finding), for
    # text reports; not part of the JSON contract. ``snippet_start``: its 0-based column.
    snippet: str = ""
    # The code already handles NPU (an NPU arm beside this CUDA one, "npu" in the same
    # collection, a guard, transfer_to_npu): left as it is, no effort.
    npu_aware: bool = False
    target: str = ""  # the port target the fix was made for (portable | npu | transfer)
    snippet_start: int = 0
    impact: str = ""  # crash | behaviour | noop | perf (from the rule row)
    # What the finding is about, for grouping work: a qualified name, literal or package.
    symbol: str = ""
    # In a try block whose ImportError handler has a fallback (an optional dependency).
    guarded: bool = False
    # The 1-based line that opens the decision this finding is part of (0: none known): the
    # outermost device test of a Python if/elif chain, a CI job, a container image. The
    # effort model makes one work package of one decision (migrate/report/effort.py).
    decision: int = 0

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.rule)

    # -- verdicts of the passes after matching: each returns a new finding -----------------
    def left_as_is(self, why: str) -> Finding:
        """The code already handles NPU (or a runtime patch does): no fix, no work."""
        return replace(self, fix=None, npu_aware=True, category="auto", message=f"{self.message} ({why})")

    def for_a_person(self, note: str) -> Finding:
        """No automatic fix here after all: a person acts (``note`` says why)."""
        return replace(self, fix=None, category="manual", message=f"{self.message} ({note})")

    def held_back(self, category: Category, fix: Fix | None, note: str) -> Finding:
        """Raised to ``category`` with ``fix`` (None: left to a person), ``note`` saying why."""
        return replace(self, category=category, fix=fix, message=f"{self.message} ({note})")

    def with_fix(self, fix: Fix, note: str = "") -> Finding:
        """The same finding with another fix (decided by ``fix_for``)."""
        return replace(self, fix=fix, message=f"{self.message} ({note})" if note else self.message)

    def for_target(self, target: str) -> Finding:
        return self if self.target == target else replace(self, target=target)

    def to_json(self) -> dict:
        return {
            "rule": self.rule,
            "name": self.name,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "message": self.message,
            "category": self.category,
            "impact": self.impact,
            "fix": self.fix.to_json() if self.fix else None,
            "npu_aware": self.npu_aware,
            "target": self.target,
        }


@dataclass
class FileError:
    path: str
    message: str

    def to_json(self) -> dict:
        return {"path": self.path, "message": self.message}


@dataclass(frozen=True)
class FileRecord:
    """What a scan read for one reported path: the path it opened, the file kind and the
    content hash of the bytes the findings' offsets point into. ``cached``: the findings
    came from the scan cache (untrusted data: apply re-derives their fixes)."""

    path: str
    kind: str
    digest: str
    cached: bool = field(default=False, compare=False)
    real: str = ""  # its resolved path at discovery: where apply may write it


@dataclass
class ScanResult:
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    files_scanned: int = 0
    target: str = ""  # the port target (with per-path overrides), as the user chose it
    files: dict[str, FileRecord] = field(default_factory=dict)  # by reported path
    # The project around the files (migrate/scan/project/: device helpers per package).
    project: Any = None
    # The resolved paths the scan was given: files are written only inside them (empty
    # with --follow-symlinks, which lets symlinks lead anywhere).
    roots: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        by_category: dict[str, int] = {c: 0 for c in CATEGORIES}
        by_rule: dict[str, int] = {}
        npu_aware = 0
        for f in self.findings:
            npu_aware += f.npu_aware
            if not f.npu_aware:  # code left as it is: no work in any category
                by_category[f.category] = by_category.get(f.category, 0) + 1
            by_rule[f.rule] = by_rule.get(f.rule, 0) + 1
        return {
            "files_scanned": self.files_scanned,
            "findings": len(self.findings),
            "errors": len(self.errors),
            "by_category": by_category,
            "by_rule": dict(sorted(by_rule.items())),
            "npu_aware": npu_aware,
            "target": self.target,
            "device_helpers": self.device_helpers(),
        }

    def device_helpers(self) -> list[dict]:
        """Per package, what portable rewrites route through (the project's helper, or the
        one the port adds); empty unless a file is ported with the portable target."""
        if self.project is None or "portable" not in self.target:
            return []
        return [{"package": name, "helpers": what} for name, what in self.project.describe()]


SNIPPET_MAX = 400  # longer lines are cut to a window around the finding
_BREAK = re.compile(r"\r\n?|\n")


def splice(text: str, edits: list[Edit]) -> str:
    """Apply edits to ``text``: in offset order, insertions before replacements at one
    offset; an edit overlapping one already made is skipped, exact duplicates made once."""
    out: list[str] = []
    pos = 0
    for e in sorted(set(edits), key=lambda e: (e.start, e.end != e.start, e.end, e.content)):
        if e.start < pos:
            continue
        out.append(text[pos : e.start])
        out.append(e.content)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)


def _byte_table(line: str) -> tuple[list[int], list[int]]:
    """For a line with non-ASCII characters: the UTF-8 byte offsets of those characters and,
    per count of them passed, the extra bytes they take (empty lists for an ASCII line)."""
    if line.isascii():
        return [], []
    starts: list[int] = []
    extra = [0]
    byte = 0
    for ch in line:
        width = len(ch.encode("utf-8", "surrogatepass"))
        if width > 1:
            starts.append(byte)
            extra.append(extra[-1] + width - 1)
        byte += width
    return starts, extra


class LineIndex:
    """Convert between character offsets and 1-based (line, column) in one text.

    Lines end at "\r\n", "\r" or "\n", as Python's tokenizer and ``ast`` count them (a
    form feed or U+2028 is not a line break)."""

    def __init__(self, text: str):
        self.text = text
        self._lines: dict[int, str] = {}
        self._byte_tables: dict[int, tuple[list[int], list[int]]] = {}
        if "\r" in text:
            self.starts = [0, *(m.end() for m in _BREAK.finditer(text))]
            return
        starts = [0]
        pos = text.find("\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = text.find("\n", pos + 1)
        self.starts = starts

    def offset(self, line: int, col0: int) -> int:
        """Offset of 1-based line and 0-based character column."""
        return self.starts[line - 1] + col0

    def offset_of_node(self, line: int, byte_col: int) -> int:
        """Offset of an ast position: 1-based line and a UTF-8 *byte* column.

        O(log n) per call after one pass over the line, so a file with one very long line
        and many nodes stays linear."""
        table = self._byte_tables.get(line)
        if table is None:
            table = self._byte_tables[line] = _byte_table(self.line_text(line))
        if not table[0]:
            return self.offset(line, byte_col)
        starts, extra = table
        k = bisect.bisect_left(starts, byte_col)
        return self.offset(line, byte_col - extra[k])

    def span(self, node) -> tuple[int, int]:
        """Character offsets [start, end) of an ast node."""
        return (
            self.offset_of_node(node.lineno, node.col_offset),
            self.offset_of_node(node.end_lineno, node.end_col_offset),
        )

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        i = bisect.bisect_right(self.starts, offset) - 1
        return i + 1, offset - self.starts[i] + 1

    def line_end(self, line: int) -> int:
        """Offset of the end of ``line``, before its line break."""
        if line >= len(self.starts):
            return len(self.text)
        end = self.starts[line]
        if self.text[end - 1] == "\n":
            end -= 1
        if end > self.starts[line - 1] and self.text[end - 1] == "\r":
            end -= 1
        return end

    def line_text(self, line: int) -> str:
        text = self._lines.get(line)
        if text is None:
            text = self._lines[line] = self.text[self.starts[line - 1] : self.line_end(line)]
        return text

    def snippet(self, line: int, col: int) -> tuple[str, int]:
        """(a window of at most SNIPPET_MAX characters of ``line`` around 1-based ``col``,
        the window's 0-based start column): memory stays bounded on very long lines."""
        start, end = self.starts[line - 1], self.line_end(line)
        if end - start <= SNIPPET_MAX:
            return self.text[start:end], 0
        first = min(max(0, col - 1 - SNIPPET_MAX // 4), end - start - SNIPPET_MAX)
        return self.text[start + first : start + first + SNIPPET_MAX], first
