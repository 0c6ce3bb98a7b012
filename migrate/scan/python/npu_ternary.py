"""--target portable: a conditional expression choosing the device gains an NPU arm.

``"cuda" if torch.cuda.is_available() else "cpu"`` keeps its CUDA arm and gains the NPU one
before its fallback where the file spells the NPU through a check::

    "cuda" if torch.cuda.is_available() else "npu" if is_npu_available() else "cpu"

A chain naming other vendors between them (``else "mps" if torch.backends.mps.is_available()
else "cpu"``, xpu, a project's own check) gets the NPU arm just before its final ``"cpu"``, as
engineers add it; every other arm stays as written. The edit spans the whole expression, so
its test is not ported too; a second run finds the NPU named in the expression and leaves it
(scan/python/awareness.py).
"""

from __future__ import annotations

import ast
import re

from migrate.core.findings import Edit
from migrate.scan.npu_names import names_npu
from migrate.scan.python.portable import spell

_AVAILABLE = "torch.cuda.is_available"


def cuda_first(f, node: ast.AST, parent: ast.AST | None) -> bool:
    """Is ``node`` the ``"cuda"`` of ``"cuda" if torch.cuda.is_available() else ...``?"""
    if not (isinstance(parent, ast.IfExp) and node is parent.body):
        return False
    return cuda_available(f, parent.test)


def cuda_available(f, test: ast.expr) -> bool:
    """Is ``test`` the call ``torch.cuda.is_available()``?"""
    return (
        isinstance(test, ast.Call)
        and not test.args
        and not test.keywords
        and f.qualname(test.func) == _AVAILABLE
    )


def device_list(value: ast.expr) -> bool:
    """A list or tuple of device names holding ``"cuda"`` and no other name of CUDA's
    (``["cpu", "cuda"]``: the devices a CUDA host has; not ``"cuda_data_parallel"``)."""
    if not isinstance(value, (ast.List, ast.Tuple)):
        return False
    names = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    cuda_only = all(n == "cuda" or "cuda" not in n.lower() for n in names)
    return len(names) == len(value.elts) and "cuda" in names and cuda_only


def npu_spelled(source: str, count: int = 0) -> str:
    """``source`` with its ``"cuda"`` string literals (the first ``count``; 0: all) spelled
    ``"npu"``, each in its own quotes."""
    return re.sub(r"""(['"])cuda\1""", lambda m: f"{m.group(1)}npu{m.group(1)}", source, count=count)


def npu_collection_arm(f, ifexp: ast.IfExp, quote: str) -> tuple[Edit, list[str]] | None:
    """``["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]``: the devices a host
    with CUDA has. Its NPU arm is the same list with "npu" for "cuda", before the fallback
    (``else ["cpu", "npu"] if is_npu_available() else ["cpu"]``); "npu" added to CUDA's list
    would make a CUDA host try an NPU. None without an NPU check to spell it with, or where
    the fallback names the NPU."""
    if names_npu(f.source(ifexp.orelse)) or names_npu(f.source(ifexp.body)):
        return None
    if not device_list(ifexp.body):
        return None  # ["", "cuda", "cuda_data_parallel"]: a CUDA setting with no NPU name
    check, imports = spell(f, '{device_type} == "npu"', quote, ifexp)
    if "{" in check or " if " in check or "==" in check:
        return None
    start, end = f.span(ifexp)
    a, b = f.span(ifexp.body)
    body = f.text[a:b]
    npu = npu_spelled(body)
    at = f.span(ifexp.orelse)[0]
    return Edit(start, end, f.text[start:at] + f"{npu} if {check} else " + f.text[at:end]), imports


def guarded(f, node: ast.AST, parent: ast.AST | None) -> bool:
    """``"cuda" if torch.cuda.is_available() else "cpu"``: the whole expression is the type."""
    return (
        cuda_first(f, node, parent)
        and isinstance(parent, ast.IfExp)
        and isinstance(parent.orelse, ast.Constant)
        and parent.orelse.value == "cpu"
    )


def fallback(f, ifexp: ast.IfExp) -> ast.Constant | None:
    """The final ``"cpu"`` of ``"cuda" if torch.cuda.is_available() else "mps" if ... else
    "cpu"``, where every arm between names a device other than the NPU by a string and its
    test does not name the NPU; else None."""
    cur: ast.expr = ifexp.orelse
    while isinstance(cur, ast.IfExp):
        arm = cur.body
        if not (isinstance(arm, ast.Constant) and isinstance(arm.value, str)):
            return None
        if names_npu(arm.value) or names_npu(f.source(cur.test)):
            return None
        cur = cur.orelse
    if isinstance(cur, ast.Constant) and cur.value == "cpu":
        return cur
    return None


def npu_arm(f, ifexp: ast.IfExp, quote: str) -> tuple[Edit, list[str]] | None:
    """The edit giving ``ifexp`` its NPU arm before the final fallback, and its imports;
    None where the file has no NPU check to spell it with, or the expression is not such a
    choice. A lone ``"cuda" ... else "cpu"`` takes only a call (``is_npu_available()``),
    as a type comparison there reads better as the type helper itself."""
    last = fallback(f, ifexp)
    if last is None:
        return None
    check, imports = spell(f, '{device_type} == "npu"', quote, ifexp)
    if "{" in check or " if " in check or ("==" in check and last is ifexp.orelse):
        return None
    start, end = f.span(ifexp)
    at = f.span(last)[0]
    npu = f"{quote}npu{quote}"
    return Edit(start, end, f.text[start:at] + f"{npu} if {check} else " + f.text[at:end]), imports
