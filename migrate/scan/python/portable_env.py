"""--target portable for CUDA/NCCL environment variables in Python (rule kind env-var).

A CUDA host still reads ``CUDA_VISIBLE_DEVICES``; the NPU runtime reads only
``ASCEND_RT_VISIBLE_DEVICES`` (ids in ascending order). The port keeps the CUDA name and
adds the Ascend one, as upstream ports do (opencompass's runner, accelerate's launchers):

* a list of names gains the Ascend name beside it;
* a write keeps its line and gains one below it setting the Ascend name, as engineers
  write it (ComfyUI, MinerU): the same value where it has no side effects
  (``os.environ["ASCEND_RT_VISIBLE_DEVICES"] = str(args.gpu)``), else the value just set
  (``... = os.environ["CUDA_VISIBLE_DEVICES"]``); a write sharing its line with other code
  sets both at once, ``os.environ["CUDA_VISIBLE_DEVICES"] = os.environ[...] = ids``;
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
import itertools

from migrate.core.fileio import newline_of
from migrate.core.findings import Edit, Finding, fix_for
from migrate.core.rules import Rule
from migrate.scan.python.device_names import Unspellable
from migrate.scan.python.npu_arm import own_lines, siblings
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
            return _write_beside(f, parent, old_src, new_src)
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


def _write_beside(f: PyFile, target: ast.AST, old_src: str, new_src: str):
    """The write ``target = value`` kept, and the Ascend name set too: on a line of its own
    below it where the write has its lines to itself, else in the same statement."""
    stmt = f.parent(target)
    a, b = f.span(target)
    written = f.text[a:b]
    mine = written.replace(old_src, new_src, 1)
    if not isinstance(stmt, ast.Assign) or not own_lines(f, stmt):
        return [Edit(b, b, f" = {mine}")], [], f"set {new_src} too"
    value = f.source(stmt.value) if _pure(stmt.value) else written
    last = stmt.end_lineno or stmt.lineno
    at = f.index.offset(last + 1, 0) if last < len(f.index.starts) else len(f.text)
    head = f.index.offset(stmt.lineno, 0)
    indent = f.text[head : head + stmt.col_offset]
    nl = newline_of(f.text)
    lead = "" if f.text[:at].endswith(("\n", "\r")) else nl
    line = f"{mine} = {value}"
    return [Edit(at, at, f"{lead}{indent}{line}{nl}")], [], f"add `{line}` below it"


_PURE_CALLS = frozenset({"str", "int", "repr", "format", "map", "sorted", "list", "tuple", "len"})


def _pure(node: ast.expr) -> bool:
    """May ``node`` be computed a second time with the same result and no effect? Names,
    constants, attributes, subscripts, f-strings and arithmetic of them, and the calls of
    ``_PURE_CALLS`` or a string's ``join`` / ``format`` on them."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        named = isinstance(func, ast.Name) and func.id in _PURE_CALLS
        on_str = (
            isinstance(func, ast.Attribute)
            and func.attr in ("join", "format")
            and isinstance(func.value, ast.Constant)
            and isinstance(func.value.value, str)
        )
        args = [*node.args, *(k.value for k in node.keywords)]
        return (named or on_str) and all(_pure(x) for x in args)
    if isinstance(node, ast.JoinedStr):
        return all(_pure(v) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return _pure(node.value)
    kids = {
        ast.Attribute: lambda n: [n.value],
        ast.Subscript: lambda n: [n.value, n.slice],
        ast.BinOp: lambda n: [n.left, n.right],
        ast.Tuple: lambda n: n.elts,
        ast.List: lambda n: n.elts,
    }.get(type(node))
    return kids is not None and all(_pure(x) for x in kids(node))


def _set_beside(f: PyFile, parent, new: str) -> bool:
    """``os.environ[NAME] = os.environ[NEW] = value``, or ``os.environ[NEW] = ...`` in the
    same block: the port's own write (or the project's), both names set."""
    stmt = f.parent(parent) if isinstance(parent, ast.Subscript) else None
    if not isinstance(stmt, ast.Assign):
        return False
    before, after = siblings(f, stmt)
    mapping, name = f.source(parent.value), parent.slice
    old = name.value if isinstance(name, ast.Constant) else None

    def writes(s: ast.stmt, key) -> bool:
        return isinstance(s, ast.Assign) and any(
            isinstance(t, ast.Subscript)
            and isinstance(t.slice, ast.Constant)
            and t.slice.value == key
            and f.source(t.value) == mapping
            for t in s.targets
        )

    # its own: the writes after it up to the next CUDA write, or before it when no CUDA
    # write comes earlier (an Ascend write below a CUDA write is that one's)
    mine = [stmt, *itertools.takewhile(lambda s: not writes(s, old), after)]
    if not any(writes(s, old) for s in before):
        mine += before
    return any(writes(s, new) for s in mine)


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
