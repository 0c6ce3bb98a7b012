"""Name the device module once where a port would repeat it or overflow a line.

A portable port writes the device-module helper at every use (``torch.cuda.empty_cache()``
becomes ``get_device_module().empty_cache()``), as maintainers mostly do. Where that makes a
line longer than the file allows (an f-string cannot be wrapped), the port binds it once in
that function, as maintainers do there::

    torch_device = get_torch_device_namespace()
    log.info(f"peak: {torch_device.max_memory_allocated() / 1e9:.02f} GB")

A script's port spells the module through its NPU check (``(torch.npu if
is_npu_available() else torch.cuda).synchronize()``); a function using that twice, or
overflowing a line with it, binds it once the same way
(``torch_device = torch.npu if is_npu_available() else torch.cuda``), and so a device type
chosen by the check (``device_type = "npu" if is_npu_available() else "cuda"``, then
``init_device_mesh(device_type, ...)``, ``x.to(device_type)``).

The binding goes before the first statement that uses it, in the innermost block holding every
use, at that statement's indentation. Only calls on lines the port changed are hoisted, only
inside functions (a module's top level is left as written), and never where the function
already uses the name. The helper returns the same module on every call, so calling it once
earlier does what the repeated calls did.
"""

from __future__ import annotations

import ast
import difflib
import re

from migrate.scan.python.bindings import chain_parts
from migrate.scan.python.quotes import lexed_quote

NAME = "torch_device"
TYPE_NAME = "device_type"  # a device type chosen by the NPU check, bound once the same way
# a zero-argument call of a device-module helper, used for an attribute: `helper().attr`
_CALL = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\(\)\.[A-Za-z_]")
# the device module spelled through an NPU check, used for an attribute
_CHOICE = re.compile(r"\(((\w+)\.npu if \w+\(\) else \2\.cuda)\)\.[A-Za-z_]")
# the device type spelled through an NPU check
_TYPE_CHOICE = re.compile(r"""(["'])npu\1 if \w+\(\) else \1cuda\1""")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)


def helper_calls(contents: list[str]) -> set[str]:
    """The device-module helper spellings the port wrote (``get_device_module``,
    ``utils.get_torch_device_namespace``): zero-argument calls whose name says device and
    that are used for an attribute (a module), not a device type or name."""
    out: set[str] = set()
    for content in contents:
        out.update(m.group(1) for m in _CHOICE.finditer(content))
        out.update(
            ast.unparse(ast.parse(m.group(), mode="eval").body) for m in _TYPE_CHOICE.finditer(content)
        )
        for m in _CALL.finditer(content):
            last = m.group(1).rsplit(".", 1)[-1]
            if "device" in last and not last.endswith(("_type", "_name", "_id", "_index")):
                out.add(m.group(1))
    return out


def hoist(old_text: str, new_text: str, spellings: set[str], limit: int | None = None) -> str:
    """``new_text`` with the helper calls of a function hoisted where one overflows a line.
    ``limit``: the longest line allowed (default: the old text's longest, 79 at least)."""
    if not spellings:
        return new_text
    try:
        tree = ast.parse(new_text)
    except SyntaxError:
        return new_text
    old, new = old_text.splitlines(), _lines(new_text)
    if limit is None:
        limit = max([len(x) for x in old] + [79])
    changed = _changed_lines(old, [x.rstrip("\r\n") for x in new])
    plans = []
    for fn in (n for n in ast.walk(tree) if isinstance(n, _SCOPES)):
        plans += _plans(fn, new, changed, spellings, limit)
    if not plans:
        return new_text
    offsets = _line_offsets(new)
    edits: list[tuple[int, int, str]] = []
    for anchor, calls, spelling in plans:
        indent = new[anchor.lineno - 1][: _char(new, anchor.lineno, anchor.col_offset)]
        at = offsets[anchor.lineno - 1]
        name = _name_for(spelling)
        value = spelling if " if " in spelling else f"{spelling}()"
        if name == TYPE_NAME:  # as the port wrote it, in the file's quotes (the first
            # use may sit in an f-string, whose field takes the other quote)
            value = _requoted(ast.get_source_segment(new_text, calls[0]) or value, old_text)
        edits.append((at, at, f"{indent}{name} = {value}\n"))
        for call in calls:
            start = offsets[call.lineno - 1] + _char(new, call.lineno, call.col_offset)
            end = offsets[call.end_lineno - 1] + _char(new, call.end_lineno, call.end_col_offset)
            if (
                isinstance(call, ast.IfExp)
                and _grouping(new_text, start)  # `(torch.npu if ... else torch.cuda).x`
                and new_text[start - 1 : start] == "("
                and new_text[end : end + 1] == ")"
            ):
                start, end = start - 1, end + 1  # the parentheses that held it
            edits.append((start, end, name))
    out = new_text
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + text + out[end:]
    try:
        ast.parse(out)
    except SyntaxError:
        return new_text
    return out


def _requoted(choice: str, old_text: str) -> str:
    """``"npu" if c() else "cuda"`` in the quote most of the file's strings use."""
    quote = lexed_quote(old_text.encode("utf-8", "surrogatepass"))
    if quote is None:
        return choice
    return re.sub(r"""(["'])(npu|cuda)\1""", lambda m: f"{quote}{m.group(2)}{quote}", choice)


def _grouping(text: str, start: int) -> bool:
    """Is the ``(`` before ``start`` a grouping one, not a call's or a subscript's?"""
    before = text[start - 2 : start - 1]  # right before it: a call's name, `)` or `]`
    return not before or not (before.isalnum() or before in "_)]")


def _name_for(spelling: str) -> str:
    """The name a spelling is bound to: the device module's, or a device type's."""
    return TYPE_NAME if spelling.startswith(("'npu'", '"npu"')) else NAME


def _plans(fn, lines: list[str], changed: set[int], spellings: set[str], limit: int) -> list:
    """(anchor statement, calls to replace, spelling) for one function: at most one per
    name bound (the device module's, a device type's)."""
    taken = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {
        n.arg for n in ast.walk(fn) if isinstance(n, ast.arg)
    }
    # `global device_type`: binding it would set the module's
    taken |= {name for n in ast.walk(fn) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
    spellings = {s for s in spellings if _name_for(s) not in taken}
    if not spellings:
        return []
    calls: dict[str, list[ast.expr]] = {}
    for node in _own_nodes(fn):
        name: str | None = None
        if isinstance(node, ast.Call) and not node.args and not node.keywords and node.lineno in changed:
            name = _dotted(node.func)
        elif isinstance(node, ast.IfExp) and node.lineno in changed:
            name = ast.unparse(node)  # the module chosen by the NPU check
        if name is not None and name in spellings:
            calls.setdefault(name, []).append(node)
    out, bound = [], set()
    for spelling, found in sorted(calls.items(), key=lambda kv: -len(kv[1])):
        repeated = " if " in spelling and len(found) > 1
        if _name_for(spelling) in bound:
            continue
        if not repeated and not any(len(lines[c.lineno - 1].rstrip("\r\n")) > limit for c in found):
            continue
        anchor = _anchor(fn, found, lines)
        if anchor is not None:
            out.append((anchor, found, spelling))
            bound.add(_name_for(spelling))
    return out


def _own_nodes(fn):
    """The nodes of ``fn``'s body, not those of functions or classes nested in it."""
    stack = [s for s in fn.body if not isinstance(s, (*_SCOPES, ast.ClassDef))]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (*_SCOPES, ast.ClassDef, ast.Lambda)):
                stack.append(child)


def _anchor(fn, calls: list[ast.expr], lines: list[str]):
    """The statement before which the binding goes: in the deepest block that holds every
    call, the statement holding the first one; None if it cannot start a line of its own."""
    parents = _Parents(fn)
    found = [parents.block_path(c) for c in calls]
    paths = [p for p in found if p is not None]
    if len(paths) < len(found):
        return None
    common = 0
    while all(len(p) > common for p in paths) and len({id(p[common][0]) for p in paths}) == 1:
        common += 1
    if common == 0:
        return None
    block = paths[0][common - 1][0]
    index = min(p[common - 1][1] for p in paths)
    stmt = block[index]
    return stmt if _starts_line(lines, stmt) else None


class _Parents:
    """The parent of every node of one function and the index of every statement in its
    block, from one walk: a call's block path is found by climbing from it, so a function
    with thousands of calls costs its size once, not once per call."""

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.fn = fn
        self.parent: dict[int, ast.AST] = {}
        self.index: dict[int, int] = {}  # id(statement) -> its index in its block
        for node in ast.walk(fn):
            for child in ast.iter_child_nodes(node):
                self.parent[id(child)] = node
            for name in ("body", "orelse", "finalbody"):
                block = getattr(node, name, None)
                for i, stmt in enumerate(block if isinstance(block, list) else ()):
                    if isinstance(stmt, ast.stmt):
                        self.index[id(stmt)] = i

    def block_path(self, target: ast.AST) -> list[tuple[list[ast.stmt], int]] | None:
        """[(block, index)] from ``fn.body`` down to the statement holding ``target``; None
        where ``target`` is not in the function's body (or only in an except clause's type)."""
        chain = [target]  # target and its ancestors, up to a child of fn
        while True:
            up = self.parent.get(id(chain[-1]))
            if up is None:
                return None
            if up is self.fn:
                break
            chain.append(up)
        chain.reverse()
        if not _in(self.fn.body, chain[0], self.index):
            return None  # in a default, a decorator or an annotation of fn
        path = [(self.fn.body, self.index[id(chain[0])])]
        k = 0
        while k + 1 < len(chain):
            stmt, child = chain[k], chain[k + 1]
            if isinstance(child, ast.ExceptHandler):
                if k + 2 >= len(chain) or not _in(child.body, chain[k + 2], self.index):
                    return None
                path.append((child.body, self.index[id(chain[k + 2])]))
                k += 2
                continue
            block = _inner_block(stmt, child, self.index)
            if block is None:
                return path
            path.append((block, self.index[id(child)]))
            k += 1
        return path


def _in(block: list[ast.stmt], node: ast.AST, index: dict[int, int]) -> bool:
    i = index.get(id(node))
    return i is not None and i < len(block) and block[i] is node


def _inner_block(stmt, child, index: dict[int, int]) -> list[ast.stmt] | None:
    """The statement list of ``stmt`` that ``child`` (a child of ``stmt``) is in, if a
    binding may go there: not for a child in an ``if``/``while`` test, a ``for`` target or
    iterable, a ``with`` item, nor an ``elif``."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list) and _in(block, child, index):
            if (
                isinstance(stmt, ast.If)
                and name == "orelse"
                and len(block) == 1
                and isinstance(block[0], ast.If)
            ):
                return None  # an elif: nothing can go between it and its `if`
            return block
    return None


def _starts_line(lines: list[str], stmt) -> bool:
    """Does the statement begin its line (nothing but indentation before it)?"""
    if getattr(stmt, "decorator_list", None):
        return False  # a decorated definition: no device call of ours sits in it
    return not lines[stmt.lineno - 1][: _char(lines, stmt.lineno, stmt.col_offset)].strip()


def _dotted(node) -> str | None:
    parts = chain_parts(node)
    return ".".join(parts) if parts else None


def _changed_lines(old: list[str], new: list[str]) -> set[int]:
    out: set[int] = set()
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "equal":
            out.update(range(j1 + 1, j2 + 1))
    return out


def _lines(text: str) -> list[str]:
    """The text's lines with their ends, split where ast counts lines (\\n, \\r\\n, \\r)."""
    return re.findall(r".*?(?:\r\n|\r|\n)|.+$", text, flags=re.S)


def _line_offsets(lines: list[str]) -> list[int]:
    out, pos = [], 0
    for line in lines:
        out.append(pos)
        pos += len(line)
    return out


def _char(lines: list[str], lineno: int, col: int) -> int:
    """ast columns are UTF-8 byte offsets: the character offset within the line."""
    return len(lines[lineno - 1].encode("utf-8")[:col].decode("utf-8", errors="replace"))
