"""Check a rewritten Python file before it is written.

The whole new text must compile. libcst (the tool users' codemods run on) must parse every
top-level statement that the rewrite touched; statements whose lines are unchanged are the
user's own bytes and are not re-parsed, which keeps the check proportional to the edit
(a full libcst parse of a large module costs about 0.25 s per 100 kB).
"""

from __future__ import annotations

import ast
import difflib


def compile_error(text: str, rel: str) -> str | None:
    try:
        compile(text, rel or "<file>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        where = f" (line {exc.lineno})" if getattr(exc, "lineno", None) else ""
        return f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}{where}"
    return None


def changed_lines(old: str, new: str) -> set[int]:
    """1-based numbers of the lines of ``new`` that differ from ``old``."""
    a, b = old.splitlines(), new.splitlines()
    out: set[int] = set()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            out.update(range(j1 + 1, max(j2, j1 + 1) + 1))
    return out


def touched_chunks(new: str, lines: set[int]) -> list[str]:
    """Source of the top-level statements covering ``lines``, merged when adjacent."""
    tree = ast.parse(new)
    src = new.splitlines(keepends=True)
    spans = []
    for stmt in tree.body:
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        if any(first <= n <= stmt.end_lineno for n in lines):
            if spans and spans[-1][1] >= first - 1:
                spans[-1][1] = stmt.end_lineno
            else:
                spans.append([first, stmt.end_lineno])
    return ["".join(src[a - 1:b]) for a, b in spans]


def verify_python(new: str, rel: str, old: str | None = None, compiled: bool = False) -> str | None:
    """None if ``new`` is fit to write, else why not."""
    if not compiled:
        problem = compile_error(new, rel)
        if problem:
            return problem
    import libcst

    chunks = [new] if old is None else touched_chunks(new, changed_lines(old, new))
    for chunk in chunks:
        try:
            libcst.parse_module(chunk)
        except libcst.ParserSyntaxError as exc:
            return f"libcst cannot parse the rewritten code ({exc.message})"
    return None
