"""Run one fixer on a source string the way the engine does (ast call + FixContext), with
the engine's own import bindings (no second resolver here)."""

from __future__ import annotations

import ast

from migrate.core.findings import Finding, Fix, LineIndex
from migrate.fix.applier import apply_fixes
from migrate.scan.python.bindings import collect_bindings
from migrate.scan.python.fixers import FIXERS, FixContext


def findings_for(fixer_name: str, qualnames: set[str], text: str) -> list[Finding]:
    tree = ast.parse(text)
    bindings = collect_bindings(tree)
    lines = LineIndex(text)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (q := bindings.qualname_of(node.func)) in qualnames:
            ctx = FixContext(text, lines, bindings, q, None)
            draft = FIXERS[fixer_name](ctx, node)
            fix = None if draft is None else Fix("unsafe", draft.description, draft.edits, draft.imports)
            out.append(
                Finding(
                    "MIG301",
                    fixer_name,
                    "t.py",
                    node.lineno,
                    node.col_offset + 1,
                    node.end_lineno,
                    node.end_col_offset + 1,
                    "m",
                    "assisted",
                    fix,
                )
            )
    return out


def run_fixer(fixer_name: str, qualnames: set[str], text: str, passes: int = 5) -> str:
    """Apply the fixer to a fixpoint (as `migrate apply --unsafe-fixes` would)."""
    for _ in range(passes):
        new, applied = apply_fixes(text, findings_for(fixer_name, qualnames, text), unsafe=True)
        if not applied:
            break
        text = new
    compile(text, "t.py", "exec")
    return text
