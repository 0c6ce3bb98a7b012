"""Check a rewritten Python file before it is written.

The whole new text must compile. libcst (the tool users' codemods run on) must parse every
statement that the rewrite touched: top-level statements whose source text does not occur
verbatim in the old file, and inside a touched class only the members that changed (under
the class header). Statements with the user's own bytes are not re-parsed, which keeps the check
proportional to the edit (a full libcst parse costs about 0.25 s per 100 kB).
"""

from __future__ import annotations

import ast


def compile_error(text: str, rel: str) -> str | None:
    try:
        compile(text, rel or "<file>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        where = f" (line {exc.lineno})" if getattr(exc, "lineno", None) else ""
        return f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}{where}"
    return None


def _first_line(stmt: ast.stmt) -> int:
    return min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])


def _source(lines: list[str], stmt: ast.stmt) -> str:
    return "".join(lines[_first_line(stmt) - 1:stmt.end_lineno])


def touched_chunks(old: str, new: str) -> list[str]:
    """Parseable pieces of ``new`` covering every statement not found verbatim in ``old``."""
    lines = new.splitlines(keepends=True)
    chunks = []
    for stmt in ast.parse(new).body:
        src = _source(lines, stmt)
        if src in old:
            continue
        if isinstance(stmt, ast.ClassDef) and stmt.body:
            header = "".join(lines[_first_line(stmt) - 1:_first_line(stmt.body[0]) - 1])
            members = [_source(lines, m) for m in stmt.body]
            changed = [m for m in members if m not in old]
            if header and header.rstrip().endswith(":") and len(changed) < len(members):
                chunks.append(header + "".join(changed))
                continue
        chunks.append(src)
    return chunks


def verify_python(new: str, rel: str, old: str | None = None, compiled: bool = False) -> str | None:
    """None if ``new`` is fit to write, else why not."""
    if not compiled:
        problem = compile_error(new, rel)
        if problem:
            return problem
    import libcst

    try:
        chunks = [new] if old is None else touched_chunks(old, new)
    except SyntaxError:
        chunks = [new]
    for chunk in chunks:
        try:
            libcst.parse_module(chunk)
        except libcst.ParserSyntaxError as exc:
            return f"libcst cannot parse the rewritten code ({exc.message})"
    return None
