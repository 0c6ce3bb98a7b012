"""Check a rewritten Python file before it is written.

The whole new text must compile. libcst (the tool users' codemods run on) must parse every
statement that the rewrite touched: top-level statements whose source text does not occur
verbatim in the old file, and inside a touched class only the members that changed (under
the class header). Statements with the user's own bytes are not re-parsed, which keeps the check
proportional to the edit (a full libcst parse costs about 0.25 s per 100 kB).
"""

from __future__ import annotations

import ast
import re

from migrate.core.errors import too_deep
from migrate.core.fileio import newline_of


def compile_error(text: str, rel: str) -> str | None:
    try:
        compile(text, rel or "<file>", "exec", dont_inherit=True)
    except (RecursionError, MemoryError) as exc:
        return too_deep(exc)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        where = f" (line {line})" if line else ""
        return f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}{where}"
    return None


def _first_line(stmt: ast.stmt) -> int:
    return min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])


def split_lines(text: str) -> list[str]:
    """Lines as ``ast`` counts them: broken at \\r\\n, \\r or \\n only (not at a form feed
    or U+2028, where str.splitlines would break), each with its line break."""
    return _LINES.findall(text)


_LINES = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+$")


def _groups(stmts: list[ast.stmt]) -> list[tuple[int, int, list[ast.stmt]]]:
    """Statements merged into (first line, last line, statements) where they share lines
    (``a(); b()`` on one line is one group, parsed once)."""
    out: list[tuple[int, int, list[ast.stmt]]] = []
    for stmt in stmts:
        first, last = _first_line(stmt), stmt.end_lineno or stmt.lineno
        if out and first <= out[-1][1]:
            out[-1][2].append(stmt)  # in place: a line of 20k statements stays linear
            out[-1] = (out[-1][0], max(out[-1][1], last), out[-1][2])
        else:
            out.append((first, last, [stmt]))
    return out


def _text(lines: list[str], first: int, last: int) -> str:
    return "".join(lines[first - 1 : last])


def _known(text: str) -> set[str]:
    """Texts of the top-level statement groups and class-member groups of ``text``."""
    lines = split_lines(text)
    known: set[str] = set()
    for first, last, stmts in _groups(ast.parse(text).body):
        known.add(_text(lines, first, last))
        for stmt in stmts:
            if isinstance(stmt, ast.ClassDef):
                known.update(_text(lines, a, b) for a, b, _ in _groups(stmt.body))
    return known


def touched_chunks(old: str, new: str) -> list[str]:
    """Parseable pieces of ``new`` covering every statement group not found in ``old``.

    Linear in the size of both texts: old groups go into a set, each new group is looked
    up once."""
    lines = split_lines(new)
    try:
        known = _known(old)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [new]
    chunks = []
    for first, last, stmts in _groups(ast.parse(new).body):
        src = _text(lines, first, last)
        if src in known:
            continue
        if len(stmts) == 1 and isinstance(stmts[0], ast.ClassDef) and stmts[0].body:
            cls = stmts[0]
            body_first = _first_line(cls.body[0])
            header = _text(lines, first, body_first - 1)
            members = [_text(lines, a, b) for a, b, _ in _groups(cls.body)]
            changed = [m for m in members if m not in known]
            if header and header.rstrip().endswith(":") and len(changed) < len(members):
                # only the header changed (a decorator): one member keeps the class parseable
                chunks.append(header + "".join(changed or members[:1]))
                continue
        chunks.append(src)
    return chunks


def verify_python(new: str, rel: str, old: str | None = None, compiled: bool = False) -> str | None:
    """None if ``new`` is fit to write, else why not. One libcst parse: the touched chunks
    are joined into one module (each is a complete top-level statement)."""
    if not compiled:
        problem = compile_error(new, rel)
        if problem:
            return problem
    import libcst

    try:
        chunks = [new] if old is None else touched_chunks(old, new)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        chunks = [new]
    if not chunks:
        return None
    nl = newline_of(new)
    module = "".join(c if c.endswith(("\n", "\r")) else c + nl for c in chunks)
    try:
        libcst.parse_module(module)
    except libcst.ParserSyntaxError as exc:
        return f"libcst cannot parse the rewritten code ({exc.message})"
    except (RecursionError, MemoryError) as exc:
        return f"libcst cannot parse the rewritten code ({too_deep(exc)})"
    return None
