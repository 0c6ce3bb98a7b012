"""Spelling portable rewrites in one file: placeholders, the file's name for torch, quotes.

A rule row's portable form is a template: ``{device_type}``, ``{device}``, ``{device_module}``,
``{amp_device_type}`` and ``{dist_backend}`` are spelled at the node being fixed by the
file's DeviceNames (migrate/scan/python/device_names.py: a ``device`` in scope, the project's
helper, or the port's own); ``torch`` is spelled as the file binds it.
"""

from __future__ import annotations

import ast
import functools
import re

from migrate.core.device_helpers import rename_torch
from migrate.scan.python.device_names import Unspellable

__all__ = ["Unspellable", "declines", "enclosing", "portable_fix", "quote_for", "spell"]


def spell(
    f, template: str, quote: str | None = None, node=None, bare: bool = False, **values: str
) -> tuple[str, list[str]]:
    """(code, imports needed): ``template`` with ``values`` and the device placeholders filled
    for ``node``, ``torch.`` spelled as the file binds it (``import torch as th``), the
    string quotes the port writes switched to ``quote`` (None: the file's own quote; inside
    an f-string, the other one). ``values`` (the user's code) are written as they are.
    ``bare``: the caller puts the result in a whole slot (DeviceNames.spell). Raises
    Unspellable."""
    if quote is None:
        quote = f.devices.quote
    code = template
    slots: dict[str, str] = {}
    for key, value in values.items():
        slot = f"\x00{len(slots)}\x00"
        slots[slot] = value
        code = code.replace("{" + key + "}", slot)
    code, imports = f.devices.spell(code, node, bare)
    dist = f.bindings.local_for("torch.distributed")
    if dist and dist != "torch.distributed":  # `import torch.distributed as dist`
        code = re.sub(r"(?<![\w.])torch\.distributed\b", dist, code)
    local = f.bindings.local_for("torch")
    if local is None:
        if re.search(r"(?<![\w.])torch\.", code):
            imports.append("import torch")
    elif local != "torch":
        code = rename_torch(code, local)
    if quote == "'":
        code = code.replace('"', "'")
    for slot, value in slots.items():
        code = code.replace(slot, value)
    return code, list(dict.fromkeys(imports))


def portable_fix(rule, edits, imports: list[str], shown: str):
    """A portable fix (core/findings.fix_for decides it), described by what its edits write."""
    from migrate.core.findings import fix_for

    return fix_for(rule, list(edits), {}, imports, description=f"Portable: {shown}")


def declines(fn):
    """A portable fix builder that returns None where the device cannot be named cleanly."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Unspellable:
            return None

    return wrapper


def chain_form(f, qualname: str) -> str:
    """In code (not imports) torch_npu.npu[.x] reads torch.npu[.x] where `torch` is bound:
    torch_npu registers torch.npu as that very module, so attribute access is the same."""
    if (qualname == "torch_npu.npu" or qualname.startswith("torch_npu.npu.")) and f.bindings.local_for(
        "torch"
    ) is not None:
        return "torch" + qualname[len("torch_npu") :]
    return qualname


def enclosing(f, node, *types):
    """The nearest ancestor of one of ``types``, or None."""
    cur = f.parent(node)
    while cur is not None and not isinstance(cur, types):
        cur = f.parent(cur)
    return cur


_PREFIX = re.compile(r"""[rRbBfFuU]*('''|\"\"\"|'|")""")


def quote_for(f, node) -> str:
    """The quote new string literals need at ``node``: the file's own, inside an f-string
    the other one."""
    outer = enclosing(f, node, ast.JoinedStr)
    if outer is None:
        return f.devices.quote
    m = _PREFIX.match(f.source(outer))
    return "'" if m and m.group(1)[0] == '"' else '"'


def whole_slot(f, node) -> bool:
    """Does ``node`` fill a whole slot, where any expression may stand unparenthesised: an
    assigned or returned value, a call argument, a keyword value, an element of a list,
    tuple or set, an f-string's replacement field?"""
    parent = f.parent(node)
    if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.Return, ast.keyword, ast.FormattedValue)):
        return parent.value is node
    if isinstance(parent, ast.Call):
        return any(a is node for a in parent.args)
    return isinstance(parent, (ast.List, ast.Tuple, ast.Set))


def bare_ok(f, node, lowest: str = "compare") -> bool:
    """May an expression binding looser than an attribute replace ``node`` without
    parentheses? ``lowest``: "compare" (``x.device.type in (...)``) or "or" (``a or b``).
    Only where the expression is a whole slot: an if/while/assert test, an assigned or
    returned value, a call argument, a keyword value, an element of a list, tuple or set, a
    comprehension's condition; a
    comparison also as an operand of
    ``and``/``or``, an ``or`` as an operand of ``or``."""
    parent = f.parent(node)
    if isinstance(parent, (ast.If, ast.While, ast.Assert)) and parent.test is node:
        return True
    if isinstance(parent, ast.IfExp) and parent.test is node:
        return lowest == "compare"  # `a if b or c else d` reads better as `a if (b or c) ...`
    if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.Return, ast.keyword)) and parent.value is node:
        return True
    if isinstance(parent, ast.Call) and any(a is node for a in parent.args):
        return True
    if isinstance(parent, (ast.List, ast.Tuple, ast.Set)):
        return True
    if isinstance(parent, ast.comprehension) and any(c is node for c in parent.ifs):
        return True
    if isinstance(parent, ast.BoolOp) and isinstance(parent.op, ast.Or) and lowest == "or":
        return True  # `a or b or c`: or is associative (diffusers' `cuda or mps` fp16 check)
    return isinstance(parent, ast.BoolOp) and lowest == "compare"
