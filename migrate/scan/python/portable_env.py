"""--target portable for CUDA/NCCL environment variables in Python (rule kind env-var).

A CUDA host still reads ``CUDA_VISIBLE_DEVICES``; the NPU runtime reads only
``ASCEND_RT_VISIBLE_DEVICES`` (ids in ascending order). The port keeps the CUDA name and
adds the Ascend one, as upstream ports do (opencompass's runner, accelerate's launchers):

* a list of names gains the Ascend name beside it;
* a write sets both, the value computed once:
  ``os.environ["CUDA_VISIBLE_DEVICES"] = os.environ["ASCEND_RT_VISIBLE_DEVICES"] = ids``;
* a read asks for the name of the host it runs on:
  ``os.environ.get("ASCEND_RT_VISIBLE_DEVICES" if is_npu_available() else
  "CUDA_VISIBLE_DEVICES")`` (``os.environ[...]``, ``os.getenv``, ``... in os.environ``);
* a command template for a child process sets the one its host reads:
  ``("ASCEND_RT_VISIBLE_DEVICES=" if is_npu_available() else "CUDA_VISIBLE_DEVICES=") + ids``
  (the whole literal or f-string chosen, each written as the file wrote it).

The check is spelled as every device decision of the file is (migrate/scan/python/
device_names.py). Anything else (a name passed to a function of the project's) is left to a
person, with the advice to set the Ascend name beside it.
"""

from __future__ import annotations

import ast

from migrate.core.findings import Edit, Finding, fix_for
from migrate.core.rules import Rule
from migrate.scan.python.device_names import Unspellable
from migrate.scan.python.portable import spell
from migrate.scan.python.pyfile import PyFile
from migrate.scan.python.spans import SpanIndex

_READS = ("get", "getenv", "__getitem__", "__contains__")


def env_vars_beside(f: PyFile, findings: list[Finding], rules: dict[str, Rule]) -> list[Finding]:
    """``findings`` with each env-var rename made portable (new findings), or left to a
    person where it cannot be."""
    strings = [
        n
        for n in f.nodes(ast.Constant, ast.JoinedStr)
        if isinstance(n, ast.JoinedStr) or isinstance(n.value, str)
    ]
    literals = SpanIndex([(*f.span(n), n) for n in strings])
    out = []
    for x in findings:
        rule = rules.get(x.rule)
        if rule is None or rule.kind != "env-var" or x.fix is None or len(x.fix.edits) != 1:
            out.append(x)
            continue
        node = literals.at(f.index.offset(x.line, x.column - 1))
        edit = x.fix.edits[0]
        new = edit.content
        try:
            made = _portable(f, node, edit) if node is not None else None
        except Unspellable:
            made = None
        if made == "beside":
            x = x.left_as_is(f"{new} is already beside it: left as is")
        elif made is not None:
            edits, imports, shown = made
            fix = fix_for(rule, edits, {}, imports, description=f"Portable: {shown}")
            x = x.with_fix(fix.locate(f.index))
        else:
            x = x.for_a_person(f"portable: keep it for CUDA hosts and set {new} beside it")
        out.append(x)
    return out


def _portable(f: PyFile, node: ast.AST, rename: Edit):
    """(edits, imports, description) of the portable form at ``node`` (the literal the
    rename ``rename`` is in), "beside" where the Ascend name is there already, or None."""
    start, end = f.span(node)
    old_src = f.text[start:end]
    new_src = old_src[: rename.start - start] + rename.content + old_src[rename.end - start :]
    parent = f.parent(node)
    q = _quote(old_src)
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
        if isinstance(parent, (ast.List, ast.Tuple, ast.Set)):
            if any(isinstance(e, ast.Constant) and e.value == rename.content for e in parent.elts):
                return "beside"
            at = f.span(parent.elts[-1])[1]
            return [Edit(at, at, f", {new_src}")], [], f"add {new_src} beside it"
        if _set_beside(f, parent, rename.content):
            return "beside"
        if parent is not None and _written(f, node, parent):
            a, b = f.span(parent)
            both = f.text[a:b].replace(old_src, new_src, 1)
            return [Edit(b, b, f" = {both}")], [], f"set {new_src} too"
        if not _read(f, node, parent):
            return None
    elif not _template(f, node):
        return None
    code, imports = spell(f, '{new} if {device_type} == "npu" else {old}', q, node, new=new_src, old=old_src)
    bare = _whole(f, node, parent)
    code = code if bare else f"({code})"
    return [Edit(start, end, code)], imports, f"`{code}`"


def _quote(src: str) -> str:
    body = src.lstrip("rRbBuUfF")
    return body[0] if body[:1] in ("'", '"') else '"'


def _written(f: PyFile, node, parent) -> bool:
    """``os.environ[NAME] = value``: the subscript is an assignment's only target."""
    if not (isinstance(parent, ast.Subscript) and parent.slice is node):
        return False
    stmt = f.parent(parent)
    return isinstance(stmt, ast.Assign) and stmt.targets == [parent]


def _set_beside(f: PyFile, parent, new: str) -> bool:
    """``os.environ[NAME] = os.environ[NEW] = value``: the port's own write (or the
    project's), both names set."""
    stmt = f.parent(parent) if isinstance(parent, ast.Subscript) else None
    return isinstance(stmt, ast.Assign) and any(
        isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and t.slice.value == new
        for t in stmt.targets
    )


def _read(f: PyFile, node, parent) -> bool:
    """``os.environ[NAME]``, ``os.environ.get(NAME...)``, ``os.getenv(NAME...)``, ``NAME in
    os.environ``: the name only asks which variable to read."""
    if isinstance(parent, ast.Subscript) and parent.slice is node and isinstance(parent.ctx, ast.Load):
        return True
    if isinstance(parent, ast.Call) and parent.args and parent.args[0] is node:
        func = parent.func
        return isinstance(func, ast.Attribute) and func.attr in ("get", "getenv")
    return (
        isinstance(parent, ast.Compare)
        and parent.left is node
        and len(parent.ops) == 1
        and isinstance(parent.ops[0], (ast.In, ast.NotIn))
    )


def _template(f: PyFile, node) -> bool:
    """A command template: concatenated, formatted, assigned, passed or returned."""
    return isinstance(node, (ast.Constant, ast.JoinedStr))


def _whole(f: PyFile, node, parent) -> bool:
    """May a conditional expression replace ``node`` without parentheses?"""
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        return True
    if isinstance(parent, ast.Call) and any(a is node for a in parent.args):
        return True
    return isinstance(parent, (ast.Assign, ast.Return, ast.keyword)) and parent.value is node
