"""--target portable for names imported from a CUDA module: ``from torch.cuda.amp import
autocast`` and every ``autocast(...)`` of the file, ported together.

The import has no generic form of its own; its uses have (rules' ``portable`` forms):
``with autocast():`` becomes ``with torch.amp.autocast(<amp device type>):``,
``@custom_fwd`` becomes ``@torch.amp.custom_fwd(device_type=<amp device type>)``,
``GradScaler()`` becomes ``torch.amp.GradScaler(...)`` (or, below the torch that has it,
``<device module>.amp.GradScaler()``). One fix makes every use and drops the name from the
import, so the file never holds half of it; where one use has no such form (the name passed
around, rebound, used in a way the form does not cover), nothing is fixed and the import
stays a finding for a person.
"""

from __future__ import annotations

import ast

from migrate.core.findings import Edit, Fix
from migrate.scan.python.portable import declines, portable_fix, quote_for, spell
from migrate.scan.python.portable_names import CUDA_MODULE, portable_use


@declines
def portable_import(f, m, stmt: ast.ImportFrom, alias: ast.alias, values: dict) -> Fix | None:
    """The fix porting every use of the name ``alias`` binds (``m``: its match), or None."""
    if not m.qualname.startswith(CUDA_MODULE + "."):
        return None  # a CUDA-only library's name (apex, flash_attn) has no generic form
    local = alias.asname or alias.name
    uses = _uses(f, local)
    if not uses:
        return None  # unused, or bound elsewhere: nothing to port through it
    edits: list[Edit] = []
    imports: list[str] = []
    for node in uses:
        fix = portable_use(f, m, node, [local], f.parent(node), values) or _module_form(f, m, node, values)
        if fix is None:
            return None
        edits += fix.edits
        imports += fix.imports
    dropped = _drop(f, stmt, alias)
    if dropped is None:
        return None
    shown = f"`{m.qualname}` through its generic form at {len(uses)} use{'s' if len(uses) != 1 else ''}"
    return portable_fix(m.entry.rule, [*edits, dropped], list(dict.fromkeys(imports)), shown)


def _uses(f, local: str) -> list[ast.Name] | None:
    """Every read of the module-level name ``local``; None where it is also bound elsewhere
    (assigned, a parameter, a def) or deleted: which binding a read means is not certain."""
    out = []
    for node in f.walk(ast.Name):
        if node.id != local:
            continue
        if not isinstance(node.ctx, ast.Load):
            return None
        out.append(node)
    for node in f.walk(ast.arg):
        if node.arg == local:
            return None
    for node in f.walk(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        if node.name == local:
            return None
    return out


def _module_form(f, m, node: ast.Name, values: dict) -> Fix | None:
    """``GradScaler`` (from torch.cuda.amp) -> ``<device module>.amp.GradScaler``: where the
    generic call is newer than the torch the code supports."""
    parent = f.parent(node)
    called = isinstance(parent, ast.Call) and parent.func is node
    if not m.qualname.startswith(CUDA_MODULE + ".") or not (called or _decorates(parent, node)):
        return None  # a reference kept or passed on: which object it means is a person's call
    code, imports = spell(f, "{device_module}", quote_for(f, node), node)
    if " if " in code and not code.startswith("("):
        code = f"({code})"
    new = code + m.qualname[len(CUDA_MODULE) :]
    start, end = f.span(node)
    return portable_fix(m.entry.rule, [Edit(start, end, new)], imports, f"`{new}`")


def _decorates(parent, node) -> bool:
    return any(d is node for d in getattr(parent, "decorator_list", ()))


def _drop(f, stmt: ast.ImportFrom, alias: ast.alias) -> Edit | None:
    """The edit removing ``alias`` from ``stmt``: the whole line where it is the only name,
    else the name and its comma (a one-line statement without comments); None otherwise."""
    start, end = f.span(stmt)
    source = f.text[start:end]
    if "#" in source or "\\" in source:
        return None
    line_start = f.index.offset(stmt.lineno, 0)
    if f.text[line_start:start].strip() or f.text[end : end + 1] not in ("\n", "\r", ""):
        return None  # not a statement on its own line
    if len(stmt.names) == 1:
        if f.bindings.local_for("torch") is None:  # the generic forms need it: it takes the line
            return Edit(start, end, "import torch")
        stop = end + (2 if f.text[end : end + 2] == "\r\n" else 1 if f.text[end : end + 1] else 0)
        return Edit(line_start, stop, "")
    if stmt.lineno != stmt.end_lineno:
        return None
    a, b = f.span(alias)
    i = stmt.names.index(alias)
    if i + 1 < len(stmt.names):  # `a, b` -> `b`
        return Edit(a, f.span(stmt.names[i + 1])[0], "")
    return Edit(f.span(stmt.names[i - 1])[1], b, "")  # `a, b` -> `a`
