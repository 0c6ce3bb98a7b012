"""Decisions: the device branches a person ports as one piece of work.

    if torch.cuda.device_count() > 1 and "cuda" in device.type:   # <- the decision (line 1)
        model = torch.nn.DataParallel(model)                      # part of it

Every finding inside the outermost ``if`` whose test asks about the device (CUDA, NCCL, a
GPU, a device, an ``is_available()``, an accelerator), its ``elif`` arms and its ``else``
included, belongs to the decision that ``if`` opens: ``Finding.decision`` is its line, and
the effort model makes one work package of it however many lines and rules it holds
(migrate/report/effort.py). An ``if`` that defines functions or classes is a block of
definitions, not a decision: the search goes on inside it.
"""

from __future__ import annotations

import ast
import re

from migrate.scan.python.spans import SpanIndex

_DEVICE_TEST = re.compile(r"cuda|nccl|gpu|device|is_available|accelerator", re.IGNORECASE)
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _defines(node: ast.If) -> bool:
    return any(isinstance(n, _DEFS) for n in ast.walk(node))


def decision_spans(f) -> SpanIndex[int]:
    """Character spans of the file's device decisions, each with the line that opens it."""
    spans: list[tuple[int, int, int]] = []
    stack: list[ast.AST] = list(f.tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _DEVICE_TEST.search(f.source(node.test)) and not _defines(node):
            spans.append((*f.span(node), node.lineno))
            continue
        for name in _BODIES:
            stack.extend(getattr(node, name, None) or ())
    return SpanIndex(spans)
