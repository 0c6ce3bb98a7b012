"""Kind ``env-var`` in Python: string literals naming a CUDA/NCCL environment variable.

``os.environ["CUDA_VISIBLE_DEVICES"]``, ``os.getenv("NCCL_DEBUG")``, ``env={"PYTORCH_CUDA_ALLOC_CONF": ...}``:
a string whose whole value is the variable's name. The table (``params.vars``,
``params.notes``, ``params.prefixes``) is the one shell scripts and Dockerfiles use.
"""

from __future__ import annotations

import ast
import re

from migrate.findings import Edit
from migrate.rules import Rule
from migrate.source.kinds import python_kind
from migrate.source.pyfile import PyFile, make_fix

_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


def _table(rules: list[Rule]):
    exact: dict[str, tuple[Rule, str | None, str]] = {}
    prefixes: list[tuple[str, Rule, str]] = []
    for rule in rules:
        notes = rule.params.get("notes") or {}
        for name, target in (rule.params.get("vars") or {}).items():
            exact[name] = (rule, target, str(notes.get(name, "")))
        raw = rule.params.get("prefixes") or {}
        items = raw.items() if isinstance(raw, dict) else ((p, None) for p in raw)
        for prefix, note in items:
            prefixes.append((prefix, rule, str(note or notes.get(prefix, ""))))
    return exact, prefixes


@python_kind("env-var")
def run(f: PyFile, rules: list[Rule]) -> None:
    exact, prefixes = _table(rules)
    for node in f.nodes(ast.Constant):
        if not isinstance(node.value, str):
            continue
        name = node.value
        if not _ENV_NAME.match(name):
            continue
        if name in exact:
            rule, target, note = exact[name]
        else:
            hit = next(((r, n) for p, r, n in prefixes if name.startswith(p)), None)
            if hit is None:
                continue
            (rule, note), target = hit, None
        values = {"name": name, "target": target or "", "note": note}
        start, end = f.span(node)
        src = f.text[start:end]
        fix = None
        if target and src[1:-1] == name and src[0] in "'\"" and src[0] == src[-1]:
            fix = make_fix(rule, [Edit(start + 1, end - 1, target)], values)
        f.report(rule, start, end, values, fix)
