"""--target portable: a comparison with a device or backend name kept true on the NPU.

``x.type == "cuda"`` -> ``x.type in ("cuda", "npu")`` (its type part spelled out too:
``d.split(":")[0]``, ``str(d)``), ``"cuda" in d`` -> ``("cuda" in d or "npu" in d)``,
``s.startswith("cuda")`` -> ``s.startswith(("cuda", "npu"))``: the same answer on CUDA and
CPU hosts, true on an NPU (the row's ``portable.compare`` / ``startswith`` forms,
scan/python/portable_strings.py).
"""

from __future__ import annotations

import ast
import re

from migrate.core.findings import Edit, Fix
from migrate.scan.python.portable import bare_ok, portable_fix


def _fix(rule, edits, values, imports, shown: str) -> Fix:
    return portable_fix(rule, edits, imports, shown)


def compare_fix(f, spec, node, cmp, forms, tail, values, quote) -> Fix | None:
    form = forms.get("compare")
    if not form or len(cmp.ops) != 1 or tail:
        return None
    left, right = cmp.left, cmp.comparators[0]
    if isinstance(cmp.ops[0], (ast.In, ast.NotIn)) and node is left and form.get("contains"):
        return _contains(f, spec, node, cmp, form, values, quote)
    if not isinstance(cmp.ops[0], (ast.Eq, ast.NotEq)):
        return None
    if node is not right and not form.get("symmetric", True):
        return None
    other = left if node is right else right
    if not _device_like(f, spec, other):
        return None  # `ort_fusions == "cuda"`: not a torch device; a person decides
    a, b = (f.span(left)[1], f.span(right)[0])
    between = f.text[a:b]
    op_text = "==" if isinstance(cmp.ops[0], ast.Eq) else "!="
    if between.count(op_text) != 1:
        return None
    new_op = form["equal"] if op_text == "==" else form["not_equal"]
    q = quote[-1] if quote else '"'
    value = form["value"]
    literal = value if value.startswith("(") else f"{q}{value}{q}"
    literal = literal.replace('"', q)
    s, e = f.span(node)
    edits = [Edit(a, b, between.replace(op_text, new_op)), Edit(s, e, literal)]
    if node is left:  # "cuda" == x.type: only symmetric forms get here
        edits = [Edit(s, e, literal), Edit(a, b, between.replace(op_text, new_op))]
    a0, b0 = f.span(cmp)
    shown = (
        f.text[a0:b0].replace(f.text[s:e], literal, 1).replace(between, between.replace(op_text, new_op), 1)
    )
    return _fix(spec.rule, sorted(edits), values, [], f"`{shown}`")


def _contains(f, spec, node, cmp, form, values, quote) -> Fix | None:
    """`"cuda" in device` -> `("cuda" in device or "npu" in device)` (exactly as before on
    CUDA and CPU hosts, and true on an NPU)."""
    right = cmp.comparators[0]
    if (
        isinstance(cmp.ops[0], ast.NotIn)
        or not _device_like(f, spec, right)
        or not isinstance(right, (ast.Name, ast.Attribute))
    ):
        return None
    q = quote[-1] if quote else '"'
    add = spec.rule.portable.get("collection_adds", "npu")
    a, b = f.span(cmp)
    code = f"{f.text[a:b]} or {q}{add}{q} in {f.source(right)}"
    if not bare_ok(f, cmp, "or"):
        code = f"({code})"
    return _fix(spec.rule, [Edit(a, b, code)], values, [], f"`{code}`")


def _device_like(f, spec, node) -> bool:
    """Does the other side of a comparison hold a device/backend (x.device.type, a variable
    named like one, get_backend())? Also its type part spelled out: ``d.split(":")[0]``,
    ``str(d)``, ``d.lower()`` (a test the port's "npu:N" would otherwise leave stale)."""
    node = _device_text_of(node)
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        name = node.attr
    elif isinstance(node, ast.Name):
        name = node.id
    else:
        return False
    return name in ("type", "device", "backend", "get_backend") or spec.name_hit(name)


_TYPE_PART = ("split", "rsplit", "partition", "rpartition")
_SAME_TEXT = ("lower", "strip", "casefold")


def _device_text_of(node: ast.AST) -> ast.AST:
    """The device a string test reads: ``d`` of ``d.split(":")[0]``, ``d.partition(":")[0]``,
    ``str(d)``, ``d.lower()`` (nested too); ``node`` itself otherwise."""
    while True:
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and node.slice.value == 0
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr in _TYPE_PART
        ):
            node = node.value.func.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _SAME_TEXT
            and not node.args
        ):
            node = node.func.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "str"
            and len(node.args) == 1
            and not node.keywords
        ):
            node = node.args[0]
        else:
            return node


def startswith_fix(f, spec, node, call, forms, values, tail: str = "") -> Fix | None:
    """`s.startswith("cuda")` -> `s.startswith(("cuda", "npu"))`; `"cuda:"` (``tail``
    ":", a device with its index: timm's ``if device.startswith('cuda:'):
    torch.cuda.set_device(device)``) -> `("cuda:", "npu:")`."""
    s_, e = f.span(node)
    q = f.text[s_:e][-1]
    new = re.sub(r'"(\w+)"', lambda m: f'"{m.group(1)}{tail}"', forms["startswith"]).replace('"', q)
    return _fix(spec.rule, [Edit(s_, e, new)], values, [], f"`startswith({new})`")
