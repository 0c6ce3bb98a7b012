"""Spelling portable rewrites in one file: the file's name for torch, quotes that fit."""

from __future__ import annotations

import re

from migrate.core.targets import expand

_TORCH = re.compile(r"(?<![\w.])torch\b")


def spell(f, template: str, quote: str = '"', **values: str) -> tuple[str, list[str]]:
    """(code, imports needed): ``template`` expanded, ``torch.`` spelled as the file binds
    it (``import torch as th``), string quotes switched to ``quote`` (inside f-strings)."""
    code = expand(template, **values)
    local = f.bindings.local_for("torch")
    imports: list[str] = []
    if local is None:
        local = "torch"
        imports.append("import torch")
    if local != "torch":
        code = _TORCH.sub(local, code)
    if quote == "'":
        code = code.replace('"', "'")
    return code, imports


def enclosing(f, node, *types):
    """The nearest ancestor of one of ``types``, or None."""
    cur = f.parent(node)
    while cur is not None and not isinstance(cur, types):
        cur = f.parent(cur)
    return cur
