"""Kind ``env-var`` in Python: string literals naming a CUDA/NCCL environment variable.

``os.environ["CUDA_VISIBLE_DEVICES"]``, ``os.getenv("NCCL_DEBUG")``,
``env={"PYTORCH_CUDA_ALLOC_CONF": ...}``: a string whose whole value is the variable's
name. The table, its lookup and its verdicts (an id list that is not ascending gets no fix)
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


@rule_kind(KIND, engine="python", params=PARAMS, tokens=tokens, compile=compile_table, refs=refs)
def run(f: PyFile, table: EnvTable) -> None:
    for node in f.nodes(ast.Constant):
        if not isinstance(node.value, str) or not _ENV_NAME.match(node.value):
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
