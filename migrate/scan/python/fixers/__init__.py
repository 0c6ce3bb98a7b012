"""Fixers: rule logic that needs Python, referenced from a rule row by name.

A rule of kind ``qualified-name`` may name a fixer for a matched qualified name::

    params:
      names: {flash_attn.flash_attn_func: torch_npu.npu_fusion_attention}
      fixers: {flash_attn.flash_attn_func: flash-attention}

When the engine finds a *call* of that name it calls the fixer with a FixContext and the
``ast.Call`` node; the fixer returns a Draft (edits on the file text, the imports they
need, a description of what they write) or None when it declines (the finding then stays
without a fix). The rule row decides the rest (``fix_for``: applicability, the rule's
imports): a fixer never does. Fixers register on the shared plug-in
registry with ``@fixer("name")`` (``FIXERS``, found by walking this package): registering a
name twice fails at import, and a rule row naming a fixer nobody registered fails the rule
load (migrate/core/kinds.py checks every cross-reference of a row).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from migrate.core.findings import Draft, Edit, LineIndex
from migrate.core.registry import Registry
from migrate.scan.python.bindings import Bindings


@dataclass
class FixContext:
    text: str  # the whole file
    index: LineIndex
    # the module's import bindings ("th" -> torch): how code here spells a qualified name
    bindings: Bindings = field(default_factory=Bindings)
    qualname: str = ""  # the matched qualified name
    target: str | None = None  # the rule's replacement for it

    def span(self, node: ast.AST) -> tuple[int, int]:
        """Character offsets [start, end) of an ast node (ast columns are UTF-8 bytes)."""
        return self.index.span(node)

    def source(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def replace(self, node: ast.AST, content: str) -> Edit:
        start, end = self.span(node)
        return Edit(start, end, content)

    def local_name(self, qualname: str) -> str | None:
        """How code in this file can refer to ``qualname`` given its imports, if at all."""
        return self.bindings.local_for(qualname)


FixerFn = Callable[[FixContext, ast.Call], Draft | None]


def _check(name: str, fn: FixerFn, meta: dict) -> None:
    if not callable(fn):
        raise ValueError("is not callable")


FIXERS: Registry[FixerFn] = Registry("fixer", "migrate.scan.python.fixers", check=_check)


def fixer(name: str) -> Callable[[FixerFn], FixerFn]:
    """Register the decorated function as fixer ``name``."""
    return FIXERS.register(name)
