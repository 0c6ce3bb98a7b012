"""--target portable: a conditional expression's CUDA arm gains an NPU copy; it stays as written.

A class picks its device in one line::

    self.device = (torch.device('cuda', torch.cuda.current_device())
                   if torch.cuda.is_available() else torch.device('cpu'))

Upstream NPU ports keep the CUDA arm and add the NPU's before the fallback, the same
expression spelled for the NPU::

    self.device = (torch.device('cuda', torch.cuda.current_device())
                   if torch.cuda.is_available()
                   else torch.device('npu', torch.npu.current_device())
                   if is_npu_available() else torch.device('cpu'))

Porting the CUDA arm in place instead (``torch.device(device_type, torch_device.current_device())``
under a widened test) hoists two bindings and rewraps the line. The arm taken: the body of
``X if torch.cuda.is_available() else Y``, ``Y`` a CPU fallback (``torch.device("cpu")``,
``"cpu"``) or a chain of other vendors' arms ending in one, no test or arm naming the NPU;
``X`` an expression (a ``"cuda"`` arm is npu_ternary.py's) whose every CUDA mention has an NPU
spelling (npu_respell.py: ``torch.cuda.X`` with a same-name counterpart, MIG101; the device
strings ``"cuda"``, ``"cuda:0"``, ``f"cuda:{rank}"``, MIG201; ``.cuda()``, MIG202). Anything
else (``torch.backends.cudnn``, a string about CUDA) leaves the expression to the in-place
port. The check is the one npu_ternary.py writes (the file's, else the port's
``is_npu_available()``). Every finding of the expression carries the one edit, so apply makes
it once; a second run finds the NPU named in the expression and leaves it
(scan/python/awareness.py).
"""

from __future__ import annotations

import ast
import re
import tokenize
from dataclasses import replace
from functools import partial

from migrate.core.findings import Edit, Finding, Fix
from migrate.scan.npu_names import names_npu
from migrate.scan.python.npu_arm import refixed
from migrate.scan.python.npu_respell import COPYABLE, fixable, respelled
from migrate.scan.python.npu_ternary import cuda_available, device_list
from migrate.scan.python.portable import spell


def add_npu_ternary_copies(f, findings: list[Finding]) -> list[Finding]:
    """``findings``, those of a device-choosing conditional expression whose CUDA arm can be
    copied for the NPU fixed by that copy, added before the fallback (new findings)."""
    if "is_available" not in f.text:
        return findings
    live, offsets = fixable(f, findings)
    if not live:
        return findings
    changed: dict[int, Finding] = {}
    for node in f.nodes(ast.IfExp):
        if not cuda_available(f, node.test) or not _copyable_arm(f, node.body):
            continue
        last = _cpu_fallback(f, node)
        if last is None:
            continue
        start, end = f.span(node)
        inside = [x for x in live if start <= offsets[id(x)] < end]
        own = [f.span(node.body), f.span(node.test)]
        if not any(_within(offsets[id(x)], own[0]) for x in inside):
            continue  # nothing CUDA's in the arm to copy
        if not all(any(_within(offsets[id(x)], s) for s in own) for x in inside):
            continue  # another arm names CUDA too: a person decides
        changed.update(refixed(f, inside, partial(_fix, f, node, last), COPYABLE))
    return [changed.get(id(x), x) for x in findings]


def _within(offset: int, span: tuple[int, int]) -> bool:
    return span[0] <= offset < span[1]


def _copyable_arm(f, body: ast.expr) -> bool:
    """An arm that is not ``"cuda"`` or a list of device names (npu_ternary.py's) and does
    not name the NPU (``"cuda:0"`` is copied: in place it reads ``(... else "cuda") + ":0"``)."""
    if (isinstance(body, ast.Constant) and body.value == "cuda") or device_list(body):
        return False
    return not names_npu(f.source(body))


def _cpu_fallback(f, ifexp: ast.IfExp) -> ast.expr | None:
    """The final CPU fallback of ``X if torch.cuda.is_available() else ... else
    torch.device("cpu")``, where no arm or test between names the NPU or CUDA; else None."""
    cur: ast.expr = ifexp.orelse
    while isinstance(cur, ast.IfExp):
        text = f.source(cur.body) + f.source(cur.test)
        if names_npu(text) or "cuda" in text.lower():
            return None
        cur = cur.orelse
    return cur if _is_cpu(f, cur) else None


def _is_cpu(f, node: ast.expr) -> bool:
    """``"cpu"`` or ``torch.device("cpu")``."""
    if isinstance(node, ast.Constant):
        return node.value == "cpu"
    return (
        isinstance(node, ast.Call)
        and len(node.args) == 1
        and not node.keywords
        and f.qualname(node.func) == "torch.device"
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "cpu"
    )


def _fix(f, ifexp: ast.IfExp, last: ast.expr, model: Fix) -> Fix | None:
    torch_local = f.bindings.local_for("torch")
    if torch_local is None:
        return None
    try:
        copy = respelled(f.source(ifexp.body), torch_local, {}, words=False)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    if copy is None:
        return None
    quoted = re.search(r"['\"]", copy)  # the arm's quote (in an f-string field, the other one)
    check, imports = spell(f, '{device_type} == "npu"', quoted.group() if quoted else None, ifexp)
    if "{" in check or " if " in check:
        return None
    start, end = f.span(ifexp)
    at = f.span(last)[0]
    new = f"{copy.rstrip()} if {check} else "
    return replace(
        model,
        description=f"Portable: an NPU arm before the fallback (`{new.strip()}`)",
        edits=[Edit(start, end, f.text[start:at] + new + f.text[at:end])],
        imports=imports,
        ranges=[],
    )
