"""``--annotate``: mark manual findings in the code with ``# migrate[RULE]: <what to do>``.

The comment goes on its own line above the *logical* line that holds the finding (for
Python: the start of the statement line, found with tokenize, so a comment never lands
inside a multi-line string; for shell, Dockerfiles and CUDA sources: the first line of a
backslash-continued command or macro, and for a line of a here-document the command that
opens it (fix/heredoc.py); CUDA sources get ``//`` comments), with that line's
indentation. Annotating twice adds nothing; ``strip_annotations`` removes exactly the
comment lines this module writes: never a line of a string or a here-document.
"""

from __future__ import annotations

import io
import re
import tokenize

from migrate.core.fileio import newline_of
from migrate.core.filekinds import FILE_KINDS
from migrate.core.findings import Edit, Finding, LineIndex, splice
from migrate.fix import heredoc

ANNOTATION = re.compile(r"^[ \t]*(?:#|//) migrate\[(MIG\d{3})\]: .*$")
# File kinds where a whole-line comment above any logical line is safe, and its marker
# (the file-kind table's ``comment`` column).
COMMENT_KINDS = {k.name: k.comment for k in FILE_KINDS.values() if k.comment}
HEREDOC_KINDS = frozenset({"shell", "docker"})  # kinds whose files hold here-documents


MAX_NOTE = 160  # characters of message kept on the comment line


def annotation_text(finding: Finding, marker: str = "#") -> str:
    """The first sentence of the message, shortened to one readable line; the rule's
    full doc is one `migrate rules RULE` away."""
    what = " ".join(finding.message.split())
    first = re.split(r"(?<=[.!?])\s+(?=[A-Z`])", what, maxsplit=1)[0]
    if len(first) > MAX_NOTE:
        first = first[:MAX_NOTE].rsplit(" ", 1)[0].rstrip(",;:") + " ..."
    if first != what:
        first += f" (see `migrate rules {finding.rule}`)"
    return f"{marker} migrate[{finding.rule}]: {first}"


def _python_line_starts(text: str) -> dict[int, int]:
    """Map each physical line to the first line of its logical line (statement line)."""
    starts: dict[int, int] = {}
    first = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NL, tokenize.COMMENT) and first is None:
                continue
            if tok.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            if first is None:
                first = tok.start[0]
            if tok.type == tokenize.NEWLINE:
                for line in range(first, tok.end[0] + 1):
                    starts[line] = first
                first = None
    except (tokenize.TokenError, SyntaxError):
        pass
    return starts


def _continued_line_start(lines: LineIndex, line: int) -> int:
    """First line of a backslash-continued line (shell commands, C macros, Dockerfiles)."""
    while line > 1 and lines.line_text(line - 1).endswith("\\"):
        line -= 1
    return line


def annotate(text: str, findings: list[Finding], kind: str) -> tuple[str, list[Finding]]:
    """Add annotations for the manual ``findings`` (one per rule and line); return the new
    text and the findings marked."""
    if kind not in COMMENT_KINDS:
        return text, []
    lines = LineIndex(text)
    starts = _python_line_starts(text) if kind == "python" else {}
    data = heredoc.bodies(text) if kind in HEREDOC_KINDS else {}
    nl = newline_of(text)
    wanted: dict[int, list[tuple[str, Finding]]] = {}
    for f in sorted(findings, key=lambda f: (f.line, f.rule)):
        if f.category != "manual":
            continue
        if kind == "python":
            target = starts.get(f.line, f.line)
        else:  # a line of a here-document is data: the note goes above the command opening it
            target = _continued_line_start(lines, f.line)
            target = _continued_line_start(lines, data.get(target, target))
        # A finding reported on an annotation line (whole-file findings sit on line 1)
        # belongs to the code below the annotations.
        while target < len(lines.starts) and ANNOTATION.match(lines.line_text(target)):
            target += 1
        note = annotation_text(f, COMMENT_KINDS[kind])
        present = _annotations_above(lines, target)
        if f.rule in present or any(g.rule == f.rule for _, g in wanted.get(target, [])):
            continue
        wanted.setdefault(target, []).append((note, f))
    edits: list[Edit] = []
    marked: list[Finding] = []
    for target, notes in wanted.items():
        line_text = lines.line_text(target)
        indent = line_text[: len(line_text) - len(line_text.lstrip(" \t"))]
        pos = lines.starts[target - 1]
        edits.append(Edit(pos, pos, "".join(indent + n + nl for n, _ in notes)))
        marked.extend(f for _, f in notes)
    return splice(text, edits), marked


def _annotations_above(lines: LineIndex, line: int) -> set[str]:
    found = set()
    line -= 1
    while line >= 1 and (m := ANNOTATION.match(lines.line_text(line))):
        found.add(m.group(1))
        line -= 1
    return found


def strip_annotations(text: str, kind: str) -> tuple[str, int]:
    """Remove annotation lines; return the new text and how many were removed."""
    if kind not in COMMENT_KINDS:
        return text, 0
    lines = LineIndex(text)
    comment_lines = _python_comment_lines(text) if kind == "python" else None
    data = heredoc.bodies(text) if kind in HEREDOC_KINDS else {}
    edits = []
    for n in range(1, len(lines.starts) + 1):
        if not ANNOTATION.match(lines.line_text(n)):
            continue
        if (comment_lines is not None and n not in comment_lines) or n in data:
            continue  # inside a string or a here-document: not ours
        start = lines.starts[n - 1]
        end = lines.starts[n] if n < len(lines.starts) else len(text)
        edits.append(Edit(start, end, ""))
    return splice(text, edits), len(edits)


def _python_comment_lines(text: str) -> set[int]:
    found = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT and not tok.line[: tok.start[1]].strip():
                found.add(tok.start[0])
    except (tokenize.TokenError, SyntaxError):
        pass
    return found
