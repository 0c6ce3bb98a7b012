"""--target portable: the CUDA arm of a vendor chain gains an NPU twin; it stays as written.

ComfyUI's ``model_management.py`` asks each vendor for its own calls::

    elif is_intel_xpu():
        stats = torch.xpu.memory_stats(dev)
        mem_total = torch.xpu.get_device_properties(dev).total_memory
    else:
        stats = torch.cuda.memory_stats(dev)
        _, mem_total_cuda = torch.cuda.mem_get_info(dev)
        mem_total = mem_total_cuda

Upstream NPU ports add the NPU's arm before the CUDA one, a copy of it for ``torch.npu``,
and leave CUDA's as it was::

    elif is_npu_available():
        stats = torch.npu.memory_stats(dev)
        _, mem_total_npu = torch.npu.mem_get_info(dev)
        mem_total = mem_total_npu

Rewriting the CUDA arm in place instead (``torch_device.memory_stats(dev)``) puts a device
switch inside a chain that is already one. The arm taken, in a chain where a test names
another vendor (rules/device_types.yaml: another vendor's device type, or a word such as
``intel``, ``rocm``, ``tpu``, ``habana``) and none names the NPU: the chain's ``else:``
where no test asks for CUDA, or an ``elif torch.cuda.is_available():``; or a first ``if
torch.cuda.is_available():``, whose twin goes right after it: an ``elif`` where other
vendors' arms follow, an ``if`` among a row of one-arm ``if`` statements, one per vendor
(torchchat's memory report). It is copied when it is one to eight statements, plain ones
or if/for/while/with blocks of them (ChatTTS's pick of the GPU with the most free memory; 24
statements and 3 blocks deep at most), whose every CUDA mention has an NPU spelling:
``torch.cuda.X`` whose counterpart has the same name (MIG101), or returns an object read
only for fields the NPU's has (``get_device_properties(i).total_memory``: npu_fields.py),
``.cuda()``, the device string ``"cuda"`` or ``f"cuda:{i}"``, and names the arm itself
assigns (``mem_total_cuda`` -> ``mem_total_npu`` where only the arm reads it); anything else
(``torch.backends.cudnn``, a string about CUDA, a ``try`` or a ``def``) leaves the arm to
the in-place port. The condition is the one npu_arm.py writes. A second run finds the NPU test
in the chain, or the NPU ``if`` beside, and leaves it.
"""

from __future__ import annotations

import ast
import re
import tokenize
from dataclasses import dataclass, replace
from functools import partial

from migrate.core.fileio import newline_of
from migrate.core.findings import Edit, Finding, Fix
from migrate.scan.device_types import device_types
from migrate.scan.npu_names import CUDA_STACK, names_npu
from migrate.scan.python.npu_arm import (
    arm_condition,
    chain,
    device_arm,
    else_line,
    is_cuda_available,
    is_elif,
    npu_arm_beside,
    refixed,
    siblings,
)
from migrate.scan.python.npu_fields import read_fields_only
from migrate.scan.python.npu_respell import COPYABLE, fixable, respelled
from migrate.scan.python.portable import enclosing

_VENDOR = re.compile(r"(?<![a-z])(?:" + "|".join(device_types().vendors) + r")(?![a-z])")
_SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return, ast.Pass, ast.Assert, ast.Raise)
_MAX_STATEMENTS = 8  # in the arm's body
_MAX_DEPTH = 3  # blocks (if/for/while/with) nested in it
_MAX_COPIED = 24  # statements in all, nested ones too
_BLOCKS = (ast.If, ast.For, ast.While, ast.With)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)  # where a name is bound


def add_npu_work_arms(f, findings: list[Finding]) -> list[Finding]:
    """``findings``, those in the CUDA arm of a vendor chain fixed by the NPU arm added
    beside it instead (new findings)."""
    if "cuda" not in f.text:
        return findings
    live, offsets = fixable(f, findings)
    if not live:
        return findings
    changed: dict[int, Finding] = {}
    for head in f.nodes(ast.If):
        if is_elif(f, head):
            continue
        if not head.orelse and is_cuda_available(f, head.test) and npu_arm_beside(f, head):
            start, end = f.span(head)
            for x in live:
                if start <= offsets[id(x)] < end:
                    changed[id(x)] = x.left_as_is("its NPU arm is beside it: left as is")
            continue
        found = _cuda_arm(f, head)
        if found is None:
            continue
        start, body = found.start, found.body
        end = f.span(body[-1])[1]
        inside = [x for x in live if start <= offsets[id(x)] < end]
        review = [x for x in inside if x.rule not in COPYABLE]
        tested = [x for x in review if found.cond and offsets[id(x)] < f.span(head.test)[1]]
        if tested:  # `backend == NCCL` stays CUDA's test: the twin tests for HCCL
            rest = [x for x in inside if x not in tested]
            fixed = refixed(f, rest, partial(_fix, f, head, found), COPYABLE)
            if fixed:
                changed.update(fixed)
                changed.update(
                    {id(x): x.left_as_is("its HCCL twin is beside it: left as is") for x in tested}
                )
            continue
        if review and read_fields_only(f, body, review):
            inside = [x for x in inside if x.rule in COPYABLE]
            fixed = refixed(f, inside, partial(_fix, f, head, found), COPYABLE)
            if fixed:
                note = "its NPU arm is beside it, reading only fields the NPU's object has: left as is"
                changed.update(fixed)
                changed.update({id(x): x.left_as_is(note) for x in review})
            continue
        changed.update(refixed(f, inside, partial(_fix, f, head, found), COPYABLE))
    return [changed.get(id(x), x) for x in findings]


@dataclass(frozen=True)
class _Place:
    """Where the NPU arm goes (``at``, a line's offset), where the CUDA arm's findings
    start (its test or its body), the CUDA arm's body, and the NPU arm's keyword."""

    at: int
    start: int
    body: list[ast.stmt]
    keyword: str = "elif"
    cond: str = ""  # the NPU arm's test where it is not the file's NPU check
    imports: tuple[str, ...] = ()  # what ``cond`` needs
    more: tuple[Edit, ...] = ()


def _cuda_arm(f, head: ast.If) -> _Place | None:
    """Where the NPU twin of the chain's CUDA arm goes, or None."""
    arms = chain(f, head)
    tests = [f.source(a.test) for a in arms]
    if any(names_npu(t) for t in tests):
        return None
    vendor = [bool(_VENDOR.search(t.lower())) for t in tests]
    if is_cuda_available(f, head.test) and device_arm(f, head) is None:
        return _after_first(f, head, len(arms) > 1 or bool(head.orelse), any(vendor[1:]))
    if not any(vendor):
        return _type_twin(f, head)
    for i, arm in enumerate(arms[1:], 1):
        if device_arm(f, arm) is not None:
            return None  # one that only names the device: npu_arm.py's
        if is_cuda_available(f, arm.test) and any(vendor[:i]):
            return _Place(f.index.offset(arm.lineno, 0), f.span(arm.test)[0], arm.body)
    last = arms[-1]
    if last.orelse and not any("cuda" in t.lower() for t in tests):
        at = else_line(f, last.orelse[0])
        if at is not None and f.index.offset(last.orelse[0].lineno, 0) > at:
            return _Place(at, f.span(last.orelse[0])[0], last.orelse)
    return _type_twin(f, head)


def _type_twin(f, head: ast.If) -> _Place | None:
    """``if device.type == "cuda":`` or ``if backend == dist.Backend.NCCL:``, also in an
    ``and`` on one line with plain operands and CUDA's availability (``if
    torch.cuda.is_available() and 'cuda' in args.device:``), whose arm does CUDA's work: its
    twin right after its body, each CUDA operand spelled for the NPU (the availability as the
    file's NPU check), as timm's engineers wrote ``elif device.type == "npu":
    torch.npu.synchronize()`` and mmengine's ``if backend == 'hccl': return
    torch.device('npu', torch.npu.current_device())``."""
    test = head.test
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    if test.lineno != test.end_lineno:
        return None
    spelled = _npu_operands(f, parts)
    if spelled is None:
        return None
    end_line = head.body[-1].end_lineno or head.body[-1].lineno
    if end_line >= len(f.index.starts):
        return None
    if not _mentions_cuda(f, head.body):
        return None  # an arm doing nothing CUDA's: the test is widened instead, one line
    operands, imports, more = spelled
    ta, tb = f.span(test)
    cond, at = "", ta
    for (a, b), npu in operands:
        cond += f.text[at:a] + npu
        at = b
    cond += f.text[at:tb]
    return _Place(f.index.offset(end_line + 1, 0), ta, head.body, "elif", cond, tuple(imports), tuple(more))


def _npu_operands(
    f, parts: list[ast.expr]
) -> tuple[list[tuple[tuple[int, int], str]], list[str], list[Edit]] | None:
    """([(span, NPU spelling)] of the CUDA operands, imports, edits), or None where an operand
    is neither CUDA's nor plain, or none is CUDA's (a lone availability test is
    _after_first's). The type test stays the last operand where there is no availability."""
    operands: list[tuple[tuple[int, int], str]] = []
    imports: list[str] = []
    more: list[Edit] = []
    available = False
    for part in parts:
        found = _cuda_operand(f, part) or _named_operand(f, part)
        if found is not None:
            operands.append((f.span(found[0]), found[1]))
        elif len(parts) > 1 and is_cuda_available(f, part):
            cond, imports, more = arm_condition(f, part)
            operands.append((f.span(part), cond))
            available = True
        elif not _plain(part):
            return None
    last = parts[-1]
    if not operands or (not available and (_cuda_operand(f, last) or _named_operand(f, last)) is None):
        return None
    return operands, imports, more


def _named_operand(f, test: ast.expr) -> tuple[ast.expr, str] | None:
    """A name the function assigned once, before the test, to a comparison
    :func:`_cuda_operand` spells (mmengine's ``is_nccl_backend = group_backend ==
    torch_dist.Backend.NCCL`` ... ``if is_nccl_backend:``), and that comparison spelled for
    the NPU (``group_backend == 'hccl'``); or None."""
    if not isinstance(test, ast.Name):
        return None
    value = _bound_once(f, test)
    if not isinstance(value, ast.Compare):
        return None
    found = _cuda_operand(f, value)
    if found is None:
        return None
    a, b = f.span(found[0])
    va, vb = f.span(value)
    return test, f.text[va:a] + found[1] + f.text[b:vb]


def _bound_once(f, name: ast.Name) -> ast.expr | None:
    """The value of the one plain assignment of ``name`` in its function, made before it
    is read here; None where the name is bound otherwise or more than once."""
    scope = enclosing(f, name, *_SCOPES)
    found = None
    for node in ast.walk(scope or f.tree):
        if isinstance(node, ast.Name) and node.id == name.id and not isinstance(node.ctx, ast.Load):
            assign = f.parent(node)
            if found is not None or not isinstance(assign, ast.Assign) or len(assign.targets) != 1:
                return None
            if assign.targets[0] is not node or assign.lineno >= name.lineno:
                return None
            found = assign.value
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name.id in node.names:
            return None
    return found


def _cuda_operand(f, test: ast.expr) -> tuple[ast.expr, str] | None:
    """The CUDA side of ``<name or attribute> == "cuda"`` (either side), of ``"cuda" in
    <name or attribute>`` (timm's ``'cuda' in args.device``), or of a comparison of a name
    with NCCL's backend (``"nccl"``, ``dist.Backend.NCCL``), and its NPU spelling; or None."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    left, right, op = test.left, test.comparators[0], test.ops[0]
    pairs: list[tuple[ast.expr, ast.expr]]
    if isinstance(op, ast.Eq):
        pairs = [(left, right), (right, left)]
    elif isinstance(op, ast.In):
        pairs = [(left, right)]
    else:
        return None
    for side, other in pairs:
        if not isinstance(other, (ast.Name, ast.Attribute)):
            continue
        if isinstance(side, ast.Constant) and side.value in ("cuda", "nccl"):
            return side, f.source(side).replace(side.value, "npu" if side.value == "cuda" else "hccl")
        if isinstance(op, ast.Eq) and _nccl_member(side):
            quote = f.devices.quote
            return side, f"{quote}hccl{quote}"
    return None


def _nccl_member(node: ast.expr) -> bool:
    """``<...>.Backend.NCCL`` (torch.distributed's backend enum)."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "NCCL"
        and isinstance(node.value, (ast.Attribute, ast.Name))
        and (node.value.attr if isinstance(node.value, ast.Attribute) else node.value.id) == "Backend"
    )


def _plain(node: ast.expr) -> bool:
    """An operand the twin's test may evaluate again: no call, no assignment expression."""
    return not any(isinstance(n, (ast.Call, ast.NamedExpr, ast.Await, ast.Yield)) for n in ast.walk(node))


def _after_first(f, head: ast.If, chained: bool, vendor_after: bool) -> _Place | None:
    """``if torch.cuda.is_available():`` first: the NPU arm right after its body, an
    ``elif`` where other vendors' arms follow, an ``if`` where it is one of a row of one-arm
    ``if`` statements, one per vendor (torchchat's memory report)."""
    end_line = head.body[-1].end_lineno or head.body[-1].lineno
    if end_line >= len(f.index.starts):
        return None
    place = _Place(f.index.offset(end_line + 1, 0), f.span(head.test)[0], head.body)
    if chained:
        return place if vendor_after or (_plain_else(f, head) and _twin_wanted(f, head)) else None
    for side in siblings(f, head):
        for other in side:
            if not isinstance(other, ast.If) or other.orelse:
                break
            if _VENDOR.search(f.source(other.test).lower()):
                return replace(place, keyword="if")
    return place if _twin_wanted(f, head) else None


def _twin_wanted(f, head: ast.If) -> bool:
    """A lone CUDA arm gets its twin unless the project spells the device module itself (a
    helper of its own, verl's ``get_torch_device()``, or an accelerator object): then the
    test is widened and the arm calls through it, as those projects' engineers write."""
    if f.devices.project_helper("module", head) or f.devices.accelerator(head) is not None:
        return False
    return _mentions_cuda(f, head.body)


def _plain_else(f, head: ast.If) -> bool:
    """Is what follows the ``if`` arm a plain ``else:`` (not an ``elif`` chain)?"""
    rest = head.orelse
    return bool(rest) and not (len(rest) == 1 and isinstance(rest[0], ast.If) and is_elif(f, rest[0]))


def _mentions_cuda(f, body: list[ast.stmt]) -> bool:
    """Does the arm name CUDA (``torch.cuda.empty_cache()``, ``.cuda()``, ``"cuda"``)? Its
    NPU twin then goes after it, as diffusers' engineers wrote ``elif
    is_torch_npu_available(): torch_npu.npu.empty_cache()`` and torchtune's ``elif
    is_npu_available: device = "npu"``; an arm that cannot be copied is ported in place."""
    return bool(CUDA_STACK.search(f.text[f.span(body[0])[0] : f.span(body[-1])[1]].lower()))


def _fix(f, head: ast.If, place: _Place, model: Fix) -> Fix | None:
    copy = _npu_copy(f, place.body)
    if copy is None:
        return None
    if place.cond:
        cond, imports, more = place.cond, list(place.imports), list(place.more)
    else:
        cond, imports, more = arm_condition(f, head.test)
    indent = re.match(r"[ \t]*", f.text[f.index.offset(head.lineno, 0) :])
    lead = indent.group() if indent else ""
    nl = newline_of(f.text)
    arm = f"{lead}{place.keyword} {cond}:{nl}{copy}"
    return replace(
        model,
        description=f"Portable: an NPU arm beside the CUDA one (`{place.keyword} {cond}:`)",
        edits=[Edit(place.at, place.at, arm), *more],
        imports=imports,
        ranges=[],
    )


def _npu_copy(f, body: list[ast.stmt]) -> str | None:
    """The arm's lines with every CUDA mention spelled for the NPU, or None where one has no
    NPU spelling or the arm is not plain statements on lines of their own."""
    if not 1 <= len(body) <= _MAX_STATEMENTS or _plain_count(body, _MAX_DEPTH) is None:
        return None
    torch_local = f.bindings.local_for("torch")
    if torch_local is None:
        return None
    first, last = body[0], body[-1]
    start = f.index.offset(first.lineno, 0)
    end_line = last.end_lineno or last.lineno
    end = f.index.offset(end_line + 1, 0) if end_line < len(f.index.starts) else len(f.text)
    if f.text[start : f.span(first)[0]].strip():
        return None  # the arm starts on its `else:` line
    text = f.text[start:end]
    renames = _own_names(f, body)
    try:
        out = respelled(text, torch_local, renames)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    if out is None or not out.endswith(("\n", "\r")):
        return None
    return out


def _plain_count(body: list[ast.stmt], depth: int) -> int | None:
    """How many statements ``body`` holds, nested ones too, where each is a plain statement
    or an if/for/while/with block of such (ChatTTS's GPU pick: a loop over the devices and
    an ``if`` on the memory found), at most ``depth`` blocks deep and ``_MAX_COPIED`` in all;
    None otherwise (a def, a try, a class, deeper or longer code stays the person's)."""
    total = 0
    for stmt in body:
        if isinstance(stmt, _SIMPLE):
            total += 1
        elif isinstance(stmt, _BLOCKS) and depth > 0:
            inner = [_plain_count(b, depth - 1) for b in (stmt.body, getattr(stmt, "orelse", [])) if b]
            if any(n is None for n in inner):
                return None
            total += 1 + sum(n or 0 for n in inner)
        else:
            return None
    return total if total <= _MAX_COPIED else None


def _own_names(f, body: list[ast.stmt]) -> dict[str, str]:
    """The names holding "cuda" that the arm assigns, each with its name in the copy: for
    the NPU where nothing outside the arm reads it (``mem_total_cuda`` -> ``mem_total_npu``),
    else as it is (the code after the chain reads what either arm assigned)."""
    assigned = {
        n.id
        for s in body
        for n in ast.walk(s)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and "cuda" in n.id.lower()
    }
    if not assigned:
        return {}
    scope = enclosing(f, body[0], *_SCOPES)
    inside = {id(n) for s in body for n in ast.walk(s)}
    names = [n for n in ast.walk(scope or f.tree) if isinstance(n, ast.Name)]
    read_outside = {n.id for n in names if n.id in assigned and id(n) not in inside}
    taken = {n.id for n in names}  # a new name the scope already uses would clobber it
    out = {}
    for name in assigned:
        new = _npu_name(name)
        out[name] = name if name in read_outside or new in taken else new
    return out


def _npu_name(name: str) -> str:
    return re.sub("cuda", "npu", re.sub("CUDA", "NPU", name), flags=re.IGNORECASE)
