"""--target portable: a device-choosing chain gains an NPU arm; its CUDA arm stays.

peft's ``infer_device``, Dolphin's ``detect_device``, torchchat's ``BuilderArgs``: an
``if torch.cuda.is_available():`` arm that only names the device, beside other arms::

    if torch.cuda.is_available():
        torch_device = "cuda"
    elif is_xpu_available():
        torch_device = "xpu"
    else:
        torch_device = "cpu"

Upstream NPU ports keep the CUDA arm and add one for the NPU before the fallback::

    elif get_device_type() == "npu":
        torch_device = "npu"

(the condition spelled with the project's type helper, or the port's; where the file imports
from a library that answers "is an NPU usable?" (rules/npu_checks.yaml: accelerate.utils,
transformers, mmengine.device ...), with that function, added to the file's import of it:
``elif is_npu_available():``). The findings of the
CUDA arm (its test, its device string) all carry that one insertion, so apply makes it once;
the chain then has an NPU arm and a second run leaves it (scan/python/awareness.py).

An early return without an ``else`` gets its NPU arm right after it, as upstream ports add
one: a second early return after ``if torch.cuda.is_available(): return torch.device("cuda")``
(``if is_torch_npu_available():`` ``return torch.device("npu")``). A second run finds the NPU
arm among the one-arm ``if`` statements after it and leaves the CUDA one as it is. So does an
``if`` among one-arm ``if`` statements that each give the same name another device
(torchchat's ``if torch.cuda.is_available(): device = "cuda"`` then ``if
torch.xpu.is_available(): device = "xpu"``): ``if is_npu_available(): device = "npu"``
follows the CUDA one. The CUDA arm may be an ``elif`` after other vendors' checks (the
project's ``is_intel_xpu()``, an ``mps_available`` flag): the NPU arm still goes before the
chain's ``else:`` (widening the CUDA test instead would send the NPU to ``"cuda"``). An arm
of two or three plain lines that name the device and what goes with it (``device = "cuda"``,
``dtype = torch.float16``) is copied for the NPU with the device spelled ``"npu"``; one doing
other CUDA work (``torch.backends.cudnn.benchmark = True``) is ported in place.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from functools import partial

from migrate.core.fileio import newline_of
from migrate.core.findings import Edit, Finding, Fix
from migrate.scan.npu_names import names_npu
from migrate.scan.python.device_names import Unspellable
from migrate.scan.python.npu_checks import (
    asks_family_cuda,
    bound_check,
    family_attribute_check,
    family_check,
    family_cuda_members,
    usable_checks,
)
from migrate.scan.python.npu_ternary import cuda_available as is_cuda_available
from migrate.scan.python.npu_ternary import device_list, npu_spelled
from migrate.scan.python.portable import spell


def add_npu_arms(f, findings: list[Finding]) -> list[Finding]:
    """``findings``, those in the CUDA arm of a device-choosing chain fixed by the chain's
    new NPU arm instead (new findings)."""
    if "is_available" not in f.text and not family_cuda_members(f):
        return findings
    live = [x for x in findings if not x.npu_aware]
    if not live:
        return findings
    offsets = {id(x): f.index.offset(x.line, x.column - 1) for x in live}
    changed: dict[int, Finding] = {}
    for node in f.nodes(ast.If):
        arm = device_arm(f, node, _asks_cuda)
        if arm is None:
            continue
        start, end = f.span(node.test)[0], f.span(node.body[-1])[1]
        inside = [x for x in live if start <= offsets[id(x)] < end]
        if not node.orelse and npu_arm_beside(f, node):
            for x in inside:
                changed[id(x)] = x.left_as_is("its NPU arm is beside it: left as is")
            continue
        changed.update(refixed(f, inside, partial(arm_fix, f, node, arm)))
    return [changed.get(id(x), x) for x in findings]


def _asks_cuda(f, test: ast.expr) -> bool:
    """``torch.cuda.is_available()``, or the project family's CUDA member (its chains' NPU
    arm comes from rule MIG208, scan/python/kinds/check_family.py: the arm's other findings
    carry it)."""
    return is_cuda_available(f, test) or asks_family_cuda(f, test)


def refixed(f, inside: list[Finding], make, allowed: frozenset[str] | None = None) -> dict[int, Finding]:
    """The findings ``inside`` an arm (by id), each fixed by the one NPU arm ``make(model)``
    builds from the first one's fix; none where one has no safe fix (or a rule outside
    ``allowed``) or the arm cannot be written."""
    model = inside[0].fix if inside else None
    if model is None or any(
        x.fix is None or x.fix.applicability != "safe" or (allowed is not None and x.rule not in allowed)
        for x in inside
    ):
        return {}
    try:
        fix = make(model)
    except Unspellable:
        return {}
    if fix is None:
        return {}
    located = fix.locate(f.index)
    return {id(x): x.with_fix(located) for x in inside}


def device_arm(f, node: ast.If, asks_cuda=is_cuda_available) -> ast.stmt | None:
    """The CUDA arm's one statement where ``node`` is ``if torch.cuda.is_available():`` (or
    such an ``elif``; ``asks_cuda(f, test)`` tells such a test: the project's
    ``is_cuda_available()`` in its family of device checks) choosing a device by name (``x =
    "cuda"``, ``return torch.device("cuda")``) with an alternative (another arm, the code
    after an early return, a one-arm ``if`` choosing another device) that does not name
    the NPU; else None."""
    if not asks_cuda(f, node.test):
        return None
    stmt = _device_stmt(f, node.body)
    if stmt is None:
        return None
    head = _head(f, node)
    if not head.orelse and not (
        isinstance(node.body[-1], ast.Return) and _after(f, node) or _in_sequence(f, node, stmt)
    ):
        return None  # an early return, or an `if` among others choosing the same name
    if any("npu" in f.source(t).lower() for t in _tests(f, head) if t is not node.test):
        return None
    value = stmt.value if isinstance(stmt, (ast.Assign, ast.Return)) else None
    if isinstance(stmt, ast.Assign) and (
        len(stmt.targets) != 1 or not isinstance(stmt.targets[0], (ast.Name, ast.Attribute))
    ):
        return None
    if value is None or not _names_cuda(f, value):
        return None
    return stmt


_CUDA_WORK = re.compile(r"cuda|gpu|nccl|nvidia", re.IGNORECASE)
_PLAIN = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Pass)


def _device_stmt(f, body: list[ast.stmt]) -> ast.stmt | None:
    """The first statement of an arm of one to three that names the device (``device =
    "cuda"``, ``return torch.device("cuda")``), where the others name it too or only set what goes with it
    (``dtype = torch.float16``): plain one-line statements, each on its own line, naming
    nothing of CUDA, a ``return`` only last; else None."""
    if not 1 <= len(body) <= 3:
        return None
    named = [
        s
        for s in body
        if isinstance(s, (ast.Assign, ast.Return)) and s.value is not None and _names_cuda(f, s.value)
    ]
    if not named:
        return None
    for i, stmt in enumerate(body):
        if stmt in named:
            continue
        if not isinstance(stmt, _PLAIN) and not (isinstance(stmt, ast.Return) and i == len(body) - 1):
            return None
        if _CUDA_WORK.search(f.source(stmt)):
            return None
    if len(body) > 1 and any(not _own_line(f, s) for s in body):
        return None
    return named[0]


def _own_line(f, stmt: ast.stmt) -> bool:
    """Is ``stmt`` one line, alone on it (no ``;``, not on its ``if``'s line)?"""
    return stmt.end_lineno == stmt.lineno and own_lines(f, stmt)


def own_lines(f, stmt: ast.stmt) -> bool:
    """Has ``stmt`` its lines to itself (nothing before it on its first line, at most a
    comment after it on its last)?"""
    start = f.index.offset(stmt.lineno, 0)
    a, b = f.span(stmt)
    last = stmt.end_lineno or stmt.lineno
    nxt = f.index.offset(last + 1, 0) if last < len(f.index.starts) else len(f.text)
    rest = f.text[b:nxt].strip()
    return not f.text[start:a].strip() and (not rest or rest.startswith("#"))


def _head(f, node: ast.If) -> ast.If:
    """The ``if`` opening the chain whose arm (or ``elif``) ``node`` is."""
    while True:
        parent = f.parent(node)
        if not (isinstance(parent, ast.If) and parent.orelse == [node] and is_elif(f, node)):
            return node
        node = parent


def chain(f, head: ast.If) -> list[ast.If]:
    """The ``if`` and its ``elif`` nodes, in order."""
    out = [head]
    while len(out[-1].orelse) == 1 and isinstance(nxt := out[-1].orelse[0], ast.If) and is_elif(f, nxt):
        out.append(nxt)
    return out


def _tests(f, head: ast.If) -> list[ast.expr]:
    """The tests of the chain opened by ``head``, in order."""
    return [arm.test for arm in chain(f, head)]


def _in_sequence(f, node: ast.If, stmt: ast.stmt) -> bool:
    """torchchat's ``if torch.cuda.is_available(): device = "cuda"`` then ``if
    torch.xpu.is_available(): device = "xpu"``: among the one-arm ``if`` statements next to
    ``node``, one whose only statement gives the name ``stmt`` assigns another device."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return False
    target = f.source(stmt.targets[0])
    for side in siblings(f, node):
        for other in side:
            if not isinstance(other, ast.If) or other.orelse or len(other.body) != 1:
                break
            one = other.body[0]
            if (
                isinstance(one, ast.Assign)
                and len(one.targets) == 1
                and f.source(one.targets[0]) == target
                and isinstance(one.value, ast.Constant)
                and isinstance(one.value.value, str)
                and one.value.value not in ("cuda", "cpu")
            ):
                return True
    return False


def siblings(f, node: ast.stmt) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """The statements before ``node`` in its block (nearest first) and after it."""
    parent = f.parent(node)
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and node in block:
            at = block.index(node)
            return block[:at][::-1], block[at + 1 :]
    return [], []


def _after(f, node: ast.stmt) -> list[ast.stmt]:
    return siblings(f, node)[1]


def npu_arm_beside(f, node: ast.If) -> bool:
    """An ``if`` naming the NPU among the one-arm ``if`` statements next to ``node`` (before
    or after it): the NPU arm a port (or an engineer) wrote."""
    for side in siblings(f, node):
        for stmt in side:
            if not isinstance(stmt, ast.If) or stmt.orelse:
                break
            if names_npu(f.source(stmt.test)):
                return True
    return False


def _names_cuda(f, value: ast.expr) -> bool:
    """``"cuda"``, ``torch.device("cuda")``, or a list or tuple of device names holding
    ``"cuda"`` (``["cpu", "cuda"]``: the devices a CUDA host has; no other name of CUDA's)."""
    if isinstance(value, ast.Constant):
        return value.value == "cuda"
    if isinstance(value, (ast.List, ast.Tuple)):
        return device_list(value)
    return (
        isinstance(value, ast.Call)
        and f.qualname(value.func) == "torch.device"
        and len(value.args) == 1
        and not value.keywords
        and isinstance(value.args[0], ast.Constant)
        and value.args[0].value == "cuda"
    )


def is_elif(f, node: ast.If) -> bool:
    line = f.text[f.index.offset(node.lineno, 0) :].lstrip()
    return line.startswith("elif")


def arm_fix(f, head: ast.If, stmt: ast.stmt, model: Fix) -> Fix | None:
    """The insertion of the NPU arm: before the chain's ``else:``, or after its last arm."""
    last = chain(f, head)[-1]
    text = f.text
    indent = re.match(r"[ \t]*", text[f.index.offset(head.lineno, 0) :])
    lead = indent.group() if indent else ""
    body_line = text[f.index.offset(stmt.lineno, 0) :]
    inner = re.match(r"[ \t]*", body_line)
    one = inner.group() if inner else lead + "    "
    keyword = "elif"
    if not _head(f, head).orelse:
        keyword = "if"  # a second early return, or `if` among `if`s, as the CUDA one
    if last.orelse:
        first = last.orelse[0]
        at = else_line(f, first)
        if at is None:
            return None
    else:
        end_line = last.body[-1].end_lineno or last.body[-1].lineno
        if end_line >= len(f.index.starts):
            return None  # the chain ends the file without a line break
        at = f.index.offset(end_line + 1, 0)
    cond, imports, more = arm_condition(f, head.test)
    nl = newline_of(text)
    lines = []
    for each in head.body:  # the arm copied, its device spelled "npu"
        source = f.source(each)
        if (
            isinstance(each, (ast.Assign, ast.Return))
            and each.value is not None
            and _names_cuda(f, each.value)
        ):
            npu = npu_spelled(source, count=1)
            if npu == source:
                return None
            source = npu
        if "\n" in source:
            return None
        lines.append(f"{one}{source}{nl}")
    arm = f"{lead}{keyword} {cond}:{nl}" + "".join(lines)
    return replace(
        model,
        description=f"Portable: an NPU arm beside the CUDA one (`{keyword} {cond}:`)",
        edits=[Edit(at, at, arm), *more],
        imports=imports,
        ranges=[],
    )


def arm_condition(f, test: ast.expr) -> tuple[str, list[str], list[Edit]]:
    """(the NPU arm's condition, the imports it needs, the edits binding it): the library
    check the file imports, else the port's device type compared with "npu"."""
    through = family_attribute_check(f, test) if not bound_check(f) else None
    if through is not None:
        return f"{through}()", [], []  # `dev.is_cuda_available()`: `dev.is_npu_available()`
    family = family_check(f) if not bound_check(f) else None
    if family is not None and (family[1] is None or family[0] not in f.bindings.names):
        return f"{family[0]}()", [family[1]] if family[1] else [], []  # the project's own first
    check = _library_check(f)
    if check is not None:
        return check[0], [], check[1]
    cond, imports = spell(f, '{device_type} == "npu"', None, test)
    return cond, imports, []


def else_line(f, first: ast.stmt) -> int | None:
    """The offset of the line holding the ``else:`` of the else block starting with
    ``first``: its own line (``else: x = "cpu"``) or the nearest one above it."""
    line = first.lineno
    while line >= 1:
        at = f.index.offset(line, 0)
        nxt = f.index.offset(line + 1, 0) if line < len(f.index.starts) else len(f.text)
        stripped = f.text[at:nxt].strip()
        if re.match(r"else\s*:", stripped):
            return at
        if line < first.lineno and stripped and not stripped.startswith("#"):
            return None
        line -= 1
    return None


def _library_check(f) -> tuple[str, list[Edit]] | None:
    """(``is_npu_available()``, the edits binding it) where the file has a library's NPU
    check bound, or imports from its module on one line (the name is added there, in the
    order the names are written); else None."""
    table = usable_checks(f)
    local = bound_check(f)
    if local:
        return f"{local}()", []
    for stmt in f.tree.body:
        if not isinstance(stmt, ast.ImportFrom) or stmt.level or stmt.module not in table:
            continue
        name = table[stmt.module]
        if name in f.bindings.names or stmt.lineno != stmt.end_lineno:
            continue
        names = stmt.names
        if any(a.name == "*" for a in names):
            continue
        a, _ = f.span(names[0])
        _, b = f.span(names[-1])
        written = [f.source(x) for x in names]
        if written == sorted(written):
            new = ", ".join(sorted([*written, name]))
        else:
            new = ", ".join([*written, name])
        return f"{name}()", [Edit(a, b, new)]
    return None
