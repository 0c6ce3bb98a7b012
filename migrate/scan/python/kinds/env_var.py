"""Kind ``env-var`` in Python: string literals naming a CUDA/NCCL environment variable.

``os.environ["CUDA_VISIBLE_DEVICES"]``, ``os.getenv("NCCL_DEBUG")``,
``env={"PYTORCH_CUDA_ALLOC_CONF": ...}``: a string whose whole value is the variable's
name; and command templates that set it for a child process
(``'CUDA_VISIBLE_DEVICES=' + ids``, ``f"CUDA_VISIBLE_DEVICES={ids} python x.py"``,
``'set CUDA_VISIBLE_DEVICES=' + ...``): a string or f-string holding ``NAME=`` at the start
of a word. The table, its lookup and its verdicts (an id list that is not ascending gets no fix)
are the ones shell scripts and Dockerfiles use (migrate.scan.tables.env_vars): the value
checked is the literal assigned to the name (``os.environ[N] = "3,1"``, ``{N: "3,1"}``,
``os.environ.setdefault(N, "3,1")``, ``os.putenv(N, "3,1")``).
"""

from __future__ import annotations

import ast
import re

from migrate.core.findings import Edit, fix_for
from migrate.core.kinds import rule_kind
from migrate.scan.python.pyfile import PyFile
from migrate.scan.tables.env_vars import (
    KIND,
    PARAMS,
    EnvTable,
    compile_table,
    refs,
    tokens,
    verdict,
)

_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_SETS = re.compile(r"(?<![\w$])([A-Z][A-Z0-9_]*)=")  # `NAME=` starting a word of a command


@rule_kind(KIND, engine="python", params=PARAMS, tokens=tokens, compile=compile_table, refs=refs)
def run(f: PyFile, table: EnvTable) -> None:
    seen: set[int] = set()
    for node in f.nodes(ast.Constant):
        if not isinstance(node.value, str):
            continue
        if not _ENV_NAME.match(node.value):
            _template(f, table, node, seen)
            continue
        name = node.value
        entry = table.lookup(name)
        if entry is None:
            continue
        rule = entry[0]
        target, note = verdict(entry, name, _assigned_value(f, node))
        values = {"name": name, "target": target or "", "note": note}
        start, end = f.span(node)
        src = f.text[start:end]
        fix = None
        if target and src[1:-1] == name and src[0] in "'\"" and src[0] == src[-1]:
            fix = fix_for(rule, [Edit(start + 1, end - 1, target)], values)
        f.report(rule, start, end, values, fix)


def _template(f: PyFile, table: EnvTable, node: ast.Constant, seen: set[int]) -> None:
    """A command template setting a variable (``"CUDA_VISIBLE_DEVICES=" + ids``): the name
    renamed where it is written in the literal (an f-string: the whole f-string is the
    literal, its parts' positions are not the source's)."""
    value = node.value
    if not isinstance(value, str) or "=" not in value:
        return
    parent = f.parent(node)
    literal: ast.AST = parent if isinstance(parent, ast.JoinedStr) else node
    if id(literal) in seen or _message(f, literal):
        return
    start, end = f.span(literal)
    src = f.text[start:end]
    for m in _SETS.finditer(value):
        entry = table.lookup(m.group(1))
        if entry is None:
            continue
        seen.add(id(literal))
        name = m.group(1)
        target, note = verdict(entry, name, None)
        values = {"name": name, "target": target or "", "note": note}
        written = [w for w in re.finditer(rf"(?<![\w$]){name}=", src)]
        fix = None
        if target and len(written) == 1:
            at = start + written[0].start()
            fix = fix_for(entry[0], [Edit(at, at + len(name), target)], values)
        f.report(entry[0], start, end, values, fix)
        return


# calls whose string arguments are messages for a person, not commands
_MESSAGE_CALLS = frozenset(
    {"print", "debug", "info", "warning", "warn", "error", "exception", "critical", "log", "echo"}
)


def _message(f: PyFile, literal: ast.AST) -> bool:
    """Is the literal a docstring or text shown to a person (a message, a help text)?"""
    child, cur = literal, f.parent(literal)
    while cur is not None and not isinstance(cur, ast.stmt):
        if isinstance(cur, ast.keyword) and cur.arg in ("help", "msg", "message", "description"):
            return True
        if isinstance(cur, ast.Call) and child is not cur.func:
            func = cur.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _MESSAGE_CALLS or name.endswith(("Error", "Exception", "Warning")):
                return True
        child, cur = cur, f.parent(cur)
    return isinstance(cur, (ast.Expr, ast.Raise, ast.Assert))


def _assigned_value(f: PyFile, node: ast.Constant) -> str | None:
    """The string literal the file assigns to the variable named by ``node``, if any."""
    parent = f.parent(node)
    value = None
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        stmt = f.parent(parent)
        if isinstance(stmt, ast.Assign) and parent in stmt.targets:
            value = stmt.value
    elif isinstance(parent, ast.Dict) and node in parent.keys:
        value = parent.values[parent.keys.index(node)]
    elif isinstance(parent, ast.Call) and parent.args and parent.args[0] is node:
        value = parent.args[1] if len(parent.args) > 1 else None
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    return None
