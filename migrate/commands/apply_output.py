"""Output of `migrate apply`: unified diffs, JSON, and the per-rule summary."""

from __future__ import annotations

import difflib
import json
import os
import re

from migrate import __version__
from migrate.core.display import escape, shown_path
from migrate.fix.rewrite import Outcome
from migrate.fix.run import ApplyRun

NO_NEWLINE = "\\ No newline at end of file\n"


_GIT_LINE = re.compile(r"[^\n]*\n|[^\n]+$")


def git_lines(text: str) -> list[str]:
    """Lines as git counts them: broken at "\n" only (a CR, form feed, U+2028 or NEL is
    part of its line, as in the file's bytes), each with its "\n"."""
    return _GIT_LINE.findall(text)


# git's quote_c_style: these bytes as C escapes, other control and non-ASCII bytes in octal
_C_ESCAPES = {7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 0x22: '"', 0x5C: "\\"}


def git_path(prefix: str, name: str) -> str:
    """``prefix + name`` as a diff header names it: as it is, or C-quoted the way git writes
    it (``"a/na\\tme.py"``, other bytes in octal) when it holds what a header cannot carry
    raw: a TAB (git apply ends the name there), a line break, a quote or backslash, or what
    ``escape`` would change (an escape sequence, a bidi override, bytes that are not
    UTF-8). Git apply unquotes it to the file's own bytes."""
    raw = os.fsencode(name)  # a non-UTF-8 name's surrogates back to its bytes
    if escape(name) == name and not any(b < 0x20 or b in (0x22, 0x5C, 0x7F) for b in raw):
        return prefix + name
    out = ['"']
    for b in prefix.encode() + raw:
        if b in _C_ESCAPES:
            out.append("\\" + _C_ESCAPES[b])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return "".join(out) + '"'


def unified_diff(outcome: Outcome, root=None) -> str:
    """A `git apply`-able diff of one file (CRLF, a UTF-8 BOM, odd line separators and
    missing final newlines kept), its path relative to the current directory where the file
    lies under it (``root``: the folder ``outcome.rel`` is relative to)."""
    old = git_lines(outcome.bom + outcome.old_text)
    new = git_lines(outcome.bom + outcome.new_text)
    out = []
    name = shown_path(outcome.rel, root)
    before = "/dev/null" if outcome.created else git_path("a/", name)
    for line in difflib.unified_diff(old, new, before, git_path("b/", name)):
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n" + NO_NEWLINE)
    return "".join(out)


def to_json(run: ApplyRun, *, written: bool, diffs: bool = False) -> str:
    edits = [e.to_json() for o in run.changed for e in o.edits]
    annotations = [
        {"rule": f.rule, "path": o.rel, "line": f.line, "message": " ".join(f.message.split())}
        for o in run.changed
        for f in o.annotated
    ]
    doc = {
        "tool": {"name": "ascend-migrate", "version": __version__},
        "written": written,
        "files": [o.rel for o in run.changed],
        "edits": edits,
        "annotations": annotations,
        "errors": [e.to_json() for e in run.errors],
        "warnings": [{"path": o.rel, "message": w} for o in run.outcomes for w in o.warnings],
        "summary": run.summary(),
    }
    if diffs:
        doc["diffs"] = {o.rel: unified_diff(o, run.root) for o in run.changed}
    return json.dumps(doc, indent=2) + "\n"


def summary_text(run: ApplyRun, *, written: bool, unsafe: bool, color: bool) -> str:
    """The table of edits per rule and one closing line, rendered with rich."""
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    buf = StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, width=100)
    by_rule = run.by_rule()
    if by_rule:
        table = Table(title=None, box=None, pad_edge=False)
        table.add_column("rule")
        table.add_column("name")
        table.add_column("edits", justify="right")
        table.add_column("files", justify="right")
        for code, row in by_rule.items():
            table.add_row(code, row["name"], str(row["edits"]), str(row["files"]))
        console.print(table)
    s = run.summary()
    verb = "changed" if written else "would change"
    parts = [
        f"{s['files_changed']} file{'s' * (s['files_changed'] != 1)} {verb}",
        f"{s['edits']} edit{'s' * (s['edits'] != 1)}",
    ]
    if s["annotations"]:
        parts.append(f"{s['annotations']} annotations")
    if s["annotations_removed"]:
        parts.append(f"{s['annotations_removed']} annotations removed")
    parts.append(f"{s['remaining']} findings left")
    if s["errors"]:
        parts.append(f"{s['errors']} errors")
    console.print(", ".join(parts) + ".", highlight=False)
    left_unsafe = sum(1 for f in run.remaining if f.fix and f.fix.applicability == "unsafe")
    if left_unsafe and not unsafe:
        console.print(f"{left_unsafe} more fixes are available with --unsafe-fixes.", highlight=False)
    return buf.getvalue()


def errors_text(run: ApplyRun) -> str:
    """Errors and warnings (hard links split), one line each, names escaped."""
    lines = [f"{escape(shown_path(e.path, run.root))}: error: {escape(e.message)}\n" for e in run.errors]
    lines += [
        f"{escape(shown_path(o.rel, run.root))}: warning: {escape(w)}\n"
        for o in run.outcomes
        for w in o.warnings
    ]
    return "".join(lines)
