"""An ``import torch`` the rewrite left unused goes, as the project's linter would ask.

A portable port can route every ``torch.cuda.*`` of a file through the device helpers, and
then ``import torch`` names nothing any more (accelerate 1.6's launchers.py and
test_utils/scripts/test_cli.py): ruff / flake8 F401 fails the project's lint. The line is
dropped only where the rewrite made it unused: the original used ``torch``, the rewritten
code does not (no name, no ``global``, no string naming ``torch`` but docstrings: string
annotations and ``__all__``), and it is a plain top-level ``import torch`` on a line of its
own. The helpers the port calls import torch themselves, so nothing runs less.
"""

from __future__ import annotations

import ast
import re

_LINE = re.compile(r"import torch[ \t]*\r?\n")


def drop_unused_torch(original: str, text: str) -> str:
    """``text`` without its top-level ``import torch`` line where the rewrite made it unused."""
    if "import torch" not in text or "torch_npu" in text:
        return text  # nothing to drop, or a file naming torch_npu: the author's (npu target)
    try:
        old, new = ast.parse(original), ast.parse(text)
    except SyntaxError:
        return text
    if not _names_torch(old) or _names_torch(new) or _strings_name_torch(new):
        return text
    node = next((n for n in new.body if _plain_import_torch(n)), None)
    if node is None:
        return text
    lines = text.splitlines(keepends=True)
    i = node.lineno - 1
    if node.end_lineno != node.lineno or not _LINE.fullmatch(lines[i]):
        return text  # a comment (noqa, type: ignore) or more on the line: the author's
    blank_before = i > 0 and not lines[i - 1].strip()
    blank_after = i + 1 < len(lines) and not lines[i + 1].strip()
    end = i + 2 if blank_before and blank_after else i + 1  # one section gap, not two
    if all(not line.strip() for line in lines[:i]):  # the file's first statement: the
        while end < len(lines) and not lines[end].strip():  # gap after it goes too, or the
            end += 1  # file would start with a blank line (ruff format removes it)
    return "".join(lines[:i] + lines[end:])


def _plain_import_torch(node: ast.stmt) -> bool:
    return isinstance(node, ast.Import) and [(a.name, a.asname) for a in node.names] == [("torch", None)]


def _names_torch(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "torch":
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and "torch" in node.names:
            return True
    return False


def _strings_name_torch(tree: ast.Module) -> bool:
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return any(
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and re.search(r"\btorch\b", node.value)
        for node in ast.walk(tree)
    )
