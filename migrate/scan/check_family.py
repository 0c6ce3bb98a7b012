"""A project's own family of device checks, and the NPU member a port adds to it.

Projects that run on several accelerators answer "is X usable here?" with one function per
vendor, side by side in one module (mmengine/device/utils.py: ``is_cuda_available``,
``is_mlu_available``, ``is_mps_available``; diffusers/utils/import_utils.py:
``is_torch_xla_available``), re-exported by the packages above it. Upstream NPU ports add
the NPU's to that module (mmengine #572: ``is_npu_available``; diffusers #7144:
``is_torch_npu_available``), export it where the others are exported, and the files that
import from there test with it. A family is a module's top-level functions named
``is_[torch_]<word>_available``, callable without arguments, where at least one word names
another vendor's accelerator (rules/device_types.yaml); its NPU member is spelled as its
siblings are (``is_torch_npu_available`` beside ``is_torch_xla_available``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from migrate.core import device_helpers
from migrate.core.import_names import resolved_module
from migrate.scan.device_types import device_types

_MEMBER = re.compile(r"is_(torch_)?([a-z][a-z0-9]*)_available\Z")
# a top-level def and its parameters, found without parsing (to the first ")")
_TOP_DEF = re.compile(r"^def[ \t]+(is_\w+_available)[ \t]*\(([^)]*)\)", re.MULTILINE)
_COMMENT = re.compile(r"#[^\n]*")
FAMILY_KIND = "device-check-family"  # the rule kind adding the NPU member (scan/python/kinds)
NPU_WORD = "npu"
CUDA_WORD = "cuda"


@dataclass(frozen=True)
class CheckFamily:
    """A package's family of device checks: where it is and its NPU member."""

    module: str  # the module defining it (diffusers.utils.import_utils)
    rel: str  # its path relative to the package's parent folder
    name: str  # its NPU member, defined or to be added (is_torch_npu_available)
    defined: bool  # the module defines it already
    anchor: str  # the member the NPU one goes after (and is exported beside)
    publics: tuple[str, ...] = ()  # packages re-exporting it (or the anchor), shallowest first


def _word(name: str) -> tuple[bool, str] | None:
    m = _MEMBER.match(name)
    return (bool(m.group(1)), m.group(2)) if m else None


def is_member(name: str) -> bool:
    """A name of the family's shape whose word is a device or vendor (``is_cuda_available``,
    ``is_torch_xla_available``, ``is_npu_available``)."""
    word = _word(name)
    return word is not None and (word[1] in (CUDA_WORD, NPU_WORD) or word[1] in device_types().vendors)


def is_cuda_member(name: str) -> bool:
    word = _word(name)
    return word is not None and word[1] == CUDA_WORD


def members_in_text(text: str) -> tuple[str, ...]:
    """The family-shaped top-level functions of a module's text, callable without
    arguments, in file order (found without parsing it)."""
    out = []
    for m in _TOP_DEF.finditer(text):
        params = [p.strip() for p in _COMMENT.sub("", m.group(2)).split(",")]
        if all(not p or "=" in p or p.startswith("*") or p == "/" for p in params) and is_member(m.group(1)):
            out.append(m.group(1))
    return tuple(dict.fromkeys(out))


def family_members(text: str) -> tuple[str, ...]:
    """The family-shaped functions of a module's text as its parsed tree has them
    (``members_in_tree``): the text is parsed only where it looks like a family, so what the
    project takes for the family module is what the port of that file finds there."""
    found = members_in_text(text)
    if not is_family(found):
        return found
    try:
        tree = ast.parse(text.removeprefix("\ufeff"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    return members_in_tree(tree)


def members_in_tree(tree: ast.Module) -> tuple[str, ...]:
    """As ``members_in_text``, from a parsed module; none where the module binds an NPU
    member's name otherwise (``is_npu_available = False``, a class, an import, a function
    needing arguments or defined under an ``if``): a member added beside it would be
    shadowed, or shadow it, and the files importing it would call something else."""
    out, defs = [], set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and is_member(node.name) and _no_required(node.args):
            out.append(node.name)
            defs.add(id(node))
    for name, node in _module_bindings(tree):
        word = _word(name)
        if word is not None and word[1] == NPU_WORD and id(node) not in defs:
            return ()
    return tuple(dict.fromkeys(out))


def _module_bindings(tree: ast.Module):
    """(name, node) of each name bound in the module's own scope, anywhere in its
    top-level statements (not in function or class bodies)."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name, node
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from ((a.asname or a.name.split(".")[0], node) for a in node.names)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            yield node.id, node
        stack.extend(ast.iter_child_nodes(node))


def module_statements(body: list[ast.stmt]):
    """The statements run at a module's top level: its body, and the blocks of its
    ``if``/``try``/``with`` statements (not function or class bodies)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            block = getattr(stmt, name, None)
            if isinstance(block, list):
                yield from module_statements(block)
        for handler in getattr(stmt, "handlers", ()):
            yield from module_statements(handler.body)


def reexports(tree: ast.Module, module: str, sources: set[str], name: str) -> list[ast.ImportFrom]:
    """The top-level imports of the package ``module`` (its ``__init__.py``'s ``tree``)
    that bind ``name`` from a module of ``sources`` (``from .utils import is_cuda_available``)."""
    out = []
    for stmt in module_statements(tree.body):
        if not isinstance(stmt, ast.ImportFrom) or resolved_module(stmt, module, True) not in sources:
            continue
        if any(a.name == name for a in stmt.names):
            out.append(stmt)
    return out


def _no_required(a: ast.arguments) -> bool:
    positional = a.posonlyargs + a.args
    return len(a.defaults) >= len(positional) and all(d is not None for d in a.kw_defaults)


def is_family(members: tuple[str, ...]) -> bool:
    """Members that make a family: one asks for another vendor's accelerator."""
    vendors = device_types().vendors
    return any((w := _word(m)) is not None and w[1] in vendors for m in members)


def npu_member(members: tuple[str, ...]) -> str | None:
    return next((m for m in members if (w := _word(m)) is not None and w[1] == NPU_WORD), None)


def npu_name(members: tuple[str, ...]) -> str:
    """The NPU member's name: as the family's existing one, else spelled as the siblings
    (``is_torch_npu_available`` where one is ``is_torch_<vendor>_available``)."""
    existing = npu_member(members)
    if existing is not None:
        return existing
    torch_spelled = any((w := _word(m)) is not None and w[0] and w[1] != CUDA_WORD for m in members)
    return f"is_torch_{NPU_WORD}_available" if torch_spelled else f"is_{NPU_WORD}_available"


def anchor(members: tuple[str, ...]) -> str:
    """The member the NPU one goes after: the CUDA one, else the last other vendor's."""
    vendors = device_types().vendors
    cuda = [m for m in members if (w := _word(m)) is not None and w[1] == CUDA_WORD]
    if cuda:
        return cuda[0]
    return [m for m in members if (w := _word(m)) is not None and w[1] in vendors][-1]


def member_source(name: str, torch_local: str | None) -> str:
    """The NPU member's source: the port's one-function check (migrate/core/device_helpers)
    named ``name``, torch spelled ``torch_local``; where the module does not bind torch
    (None: diffusers' import_utils runs where torch is not installed), it imports torch
    itself and answers False without it."""
    check = [device_helpers.NAMES["check"]]
    code = device_helpers.definitions(check, torch_local or "torch", callees=False).rstrip("\n")
    code = re.sub(r"\Adef \w+\(", f"def {name}(", code)
    if torch_local is not None:
        return code
    lines = code.splitlines()
    at = next(i for i, line in enumerate(lines) if i > 0 and line.strip().endswith('"""')) + 1
    guard = ["    try:", "        import torch", "    except ImportError:", "        return False"]
    return "\n".join([*lines[:at], *guard, *lines[at:]])
