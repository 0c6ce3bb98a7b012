"""Fixers: rule logic that needs Python, referenced from a rule row by name.

A rule of kind ``qualified-name`` may name a fixer for a matched qualified name::

    params:
      names: {flash_attn.flash_attn_func: torch_npu.npu_fusion_attention}
      fixers: {flash_attn.flash_attn_func: flash-attention}

When the engine finds a *call* of that name it calls the fixer with a FixContext and the
``ast.Call`` node; the fixer returns a Fix (edits on the file text) or None when it
declines (the finding then stays without a fix). Fixers register with ``@fixer("name")``;
registering a name twice fails at import.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field

from migrate.core.findings import Edit, Fix, LineIndex


@dataclass
class FixContext:
    text: str  # the whole file
    index: LineIndex
    # local name -> qualified name, from the module's imports ("th" -> "torch").
    imports: dict[str, str] = field(default_factory=dict)
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
        best = None
        for local, qual in self.imports.items():
            if qualname == qual or qualname.startswith(qual + "."):
                if best is None or len(qual) > len(self.imports[best]):
                    best = local
        if best is None:
            return None
        return best + qualname[len(self.imports[best]):]



FixerFn = Callable[[FixContext, ast.Call], Fix | None]
_DISCOVERED = False
_FIXERS: dict[str, FixerFn] = {}


def fixer(name: str) -> Callable[[FixerFn], FixerFn]:
    def register(fn: FixerFn) -> FixerFn:
        if name in _FIXERS:
            raise ValueError(f"fixer {name!r} registered twice")
        _FIXERS[name] = fn
        return fn

    return register


def get_fixer(name: str) -> FixerFn:
    global _DISCOVERED
    if not _DISCOVERED:  # import every module once, even if one was imported directly
        _DISCOVERED = True
        for mod in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{mod.name}")
    return _FIXERS[name]
