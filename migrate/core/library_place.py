"""Where an import from a third-party library goes, as isort sorts it: among the file's
third-party imports (the block of leading imports holding its first torch import), by
module name (``from transformers import is_torch_npu_available`` after ``from
torch.autograd.graph import saved_tensors_hooks``), not in a section of its own as an
import of the project's own package (migrate/core/import_placement.py ``import_edits``).
"""

from __future__ import annotations

import ast


def _is_torch(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "torch" for a in node.names)
    return (
        isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "torch"
    )


def _blocks(tree: ast.Module, lines: list[str]) -> list[list[ast.stmt]]:
    """The module's leading import statements (a docstring aside), in runs that no blank
    line separates (isort's sections); empty where one shares a line with other code."""
    out: list[list[ast.stmt]] = []
    prev: ast.stmt | None = None
    for i, node in enumerate(tree.body):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue
            break
        if prev is not None and node.lineno == prev.end_lineno:
            return []
        between = lines[prev.end_lineno : node.lineno - 1] if prev is not None and prev.end_lineno else []
        if prev is None or any(not line.strip() for line in between):
            out.append([])
        out[-1].append(node)
        prev = node
    return out


def library_anchor(text: str, tree: ast.Module, module: str) -> int | None:
    """The line index after which ``from module import ...`` goes: in the block of leading
    imports holding the file's first torch import, before its first ``from`` import of a
    module sorting after ``module`` (where those are sorted), else after the block's last
    import; None where the file has no such block (the caller places it as it would)."""
    lines = text.splitlines()
    block = next((b for b in _blocks(tree, lines) if any(_is_torch(n) for n in b)), None)
    if block is None:
        return None
    froms = [n for n in block if isinstance(n, ast.ImportFrom) and not n.level]
    keys = [(n.module or "").lower() for n in froms]
    if keys == sorted(keys):
        after = next((n for n, k in zip(froms, keys, strict=True) if k > module.lower()), None)
        if after is not None:
            return after.lineno - 1
    last = [n for n in block if not getattr(n, "level", 0)][-1]  # the block holds torch's
    return last.end_lineno or last.lineno
