"""Run one fixer on a source string the way the engine does (ast call + FixContext)."""

from __future__ import annotations

import ast

from migrate.core.findings import Finding, LineIndex
from migrate.fix.applier import apply_fixes
from migrate.scan.python.fixers import FixContext, get_fixer


def imports_of(tree: ast.Module) -> dict[str, str]:
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def qualname(node: ast.expr, imports: dict[str, str]) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in imports:
        return ".".join([imports[node.id], *reversed(parts)])
    return None


def findings_for(fixer_name: str, qualnames: set[str], text: str) -> list[Finding]:
    tree = ast.parse(text)
    imports = imports_of(tree)
    lines = LineIndex(text)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (q := qualname(node.func, imports)) in qualnames:
            ctx = FixContext(text, lines, imports, q, None)
            fix = get_fixer(fixer_name)(ctx, node)
            out.append(Finding("MIG301", fixer_name, "t.py", node.lineno, node.col_offset + 1,
                               node.end_lineno, node.end_col_offset + 1, "m", "assisted", fix))
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
