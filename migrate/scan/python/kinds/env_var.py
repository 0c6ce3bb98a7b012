"""Kind ``env-var`` in Python: string literals naming a CUDA/NCCL environment variable.

``os.environ["CUDA_VISIBLE_DEVICES"]``, ``os.getenv("NCCL_DEBUG")``,
``env={"PYTORCH_CUDA_ALLOC_CONF": ...}``: a string whose whole value is the variable's
name. The table and its lookup (exact names, then the longest prefix, minus ``ignore``)
are the ones shell scripts and Dockerfiles use (text_envvars.py).
"""

from __future__ import annotations

import ast
import re

from migrate.core.findings import Edit
from migrate.core.rules import Rule
from migrate.scan.python.kinds import python_kind
from migrate.scan.python.pyfile import PyFile, make_fix
from migrate.scan.text.kinds.env_var import env_var_table, lookup_env_var

_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


@python_kind("env-var")
def run(f: PyFile, rules: list[Rule]) -> None:
    table = env_var_table(rules)
    for node in f.nodes(ast.Constant):
        if not isinstance(node.value, str) or not _ENV_NAME.match(node.value):
            continue
        name = node.value
        entry = lookup_env_var(name, table)
        if entry is None:
            continue
        rule, target, note = entry
        values = {"name": name, "target": target or "", "note": note}
        start, end = f.span(node)
        src = f.text[start:end]
        fix = None
        if target and src[1:-1] == name and src[0] in "'\"" and src[0] == src[-1]:
            fix = make_fix(rule, [Edit(start + 1, end - 1, target)], values)
        f.report(rule, start, end, values, fix)
