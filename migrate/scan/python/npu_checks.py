"""Where a file already has a way to ask "is an Ascend NPU in use here?".

A portable port spells the NPU side of a device decision with the check the code already
has, as upstream ports do (``"npu" if is_torch_npu_available() else "cuda"``,
``elif is_npu_available():``):

* a library's check the file imports (rules/npu_checks.yaml: accelerate.utils,
  transformers, mmengine.device ...), or imports from where the file imports other names of
  that library's module (added to that import) -- where that library's source is in the
  scanned tree (the file is part of it, or it lies beside), only if its module defines or
  exports the check there (``absent_checks``): mmengine before #572 had no
  ``mmengine.device.is_npu_available``, and importing it broke the whole library;
* a function of the file's own with a check's name and no required argument
  (FunASR's ``is_npu_available()``);
* in a script with neither, the port's own one-function check (``is_npu_available`` in
  migrate/core/device_helpers/template.py), defined once after the imports.
"""

from __future__ import annotations

import ast
import os
from functools import cache
from pathlib import Path

import yaml

from migrate.core.resources import rules_dir

# names a function of the file's own answers the question by (no required argument)
CHECK_NAMES = ("is_npu_available", "is_torch_npu_available", "npu_is_available")


@cache
def npu_checks() -> dict[str, str]:
    """module -> the function it exports that tells whether an NPU is usable
    (rules/npu_checks.yaml)."""
    data = yaml.safe_load((rules_dir() / "npu_checks.yaml").read_text(encoding="utf-8")) or {}
    return {str(k): str(v) for k, v in (data.get("npu_checks") or {}).items()}


def usable_checks(f) -> dict[str, str]:
    """The table (``npu_checks``) without the modules whose check the scanned tree's copy of
    the library lacks (``FileDevices.absent_checks``): what the port may import for ``f``."""
    absent = f.file_devices.absent_checks if getattr(f, "file_devices", None) else ()
    table = npu_checks()
    return {m: n for m, n in table.items() if m not in absent} if absent else table


def bound_check(f) -> str | None:
    """The local name of a library's NPU check the file imports by name, or None."""
    for module, name in npu_checks().items():
        local = f.bindings.local_for(f"{module}.{name}")
        if local and "." not in local:
            return local
    return None


def _once(fn):
    """``fn(f)`` computed once per parsed file (its tree does not change): a check asked for
    at each of a file's device decisions is found in one walk of its statements, not one per
    decision (apply stays linear in findings)."""

    def once(f):
        memo = getattr(f, "memo", None)
        if memo is None:
            return fn(f)
        key = fn.__name__
        if key not in memo:
            memo[key] = fn(f)
        return memo[key]

    once.__name__, once.__doc__ = fn.__name__, fn.__doc__
    return once


@_once
def importable_check(f) -> tuple[str, str] | None:
    """(module, name) of a library's NPU check where the file imports other names from that
    module (``from accelerate.utils import is_xpu_available``): the port imports it there."""
    table = usable_checks(f)
    for stmt in f.tree.body:
        if isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module in table:
            if not any(a.name == "*" for a in stmt.names):
                return stmt.module, table[stmt.module]
    return None


@_once
def own_check(f) -> ast.FunctionDef | None:
    """A top-level function of the file's own named as a check, callable without
    arguments (its body is the file's business: the port only calls it)."""
    for node in f.tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in CHECK_NAMES and _no_required(node.args):
            return node
    return None


def _no_required(a: ast.arguments) -> bool:
    positional = a.posonlyargs + a.args
    return len(a.defaults) >= len(positional) and all(d is not None for d in a.kw_defaults)


# ---------------------------------------------------------------------------------------
# Does the library's source in the scanned tree have the check?

_MAX_BYTES = 2_000_000  # a module read to find a name: larger ones are not read
_MAX_STARS = 3  # `from .x import *` followed this deep


def absent_checks(folders: list[Path]) -> frozenset[str]:
    """The table's modules whose library has its source in one of ``folders`` (the folder
    of a scanned file and its parents: ``<folder>/<top>/__init__.py`` or under ``src/``) and
    whose module there neither defines nor exports the check: a port importing it would
    fail (ImportError) against that code. A library not found in the tree is not judged."""
    out = set()
    for module, name in npu_checks().items():
        top = module.split(".")[0]
        for folder in folders:
            base = _library_in(folder, top)
            if base is not None:
                if not _exports(base, module.split(".")[1:], name, _MAX_STARS):
                    out.add(module)
                break
    return frozenset(out)


def _library_in(folder: Path, top: str) -> Path | None:
    for base in (folder / top, folder / "src" / top):
        if (base / "__init__.py").is_file():
            return base
    return None


@cache
def _module_file(base: Path, parts: tuple[str, ...]) -> Path | None:
    path = base.joinpath(*parts)
    for cand in (path / "__init__.py", path.with_suffix(".py")):
        if cand.is_file():
            return cand
    return None


def _exports(base: Path, parts: list[str], name: str, stars: int) -> bool:
    """Whether the module ``parts`` of the package at ``base`` binds ``name`` at module level
    (def, class, assignment, import; under ``if``/``try`` blocks too) or names it in a
    string (``__all__``, a lazy module's import structure), following its ``from .x import *``
    ``stars`` deep. Unreadable or too large: not confirmed."""
    path = _module_file(base, tuple(parts))
    if path is None:
        return False
    try:
        if os.path.getsize(path) > _MAX_BYTES:
            return False
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return False
    package = parts if path.name == "__init__.py" else parts[:-1]
    for node in _module_level(tree.body):
        if name in _bound(node):
            return True
        if isinstance(node, ast.ImportFrom) and stars and any(a.name == "*" for a in node.names):
            inner = _star_source(package, node)
            if inner is not None and _exports(base, inner, name, stars - 1):
                return True
    return any(isinstance(c, ast.Constant) and c.value == name for c in ast.walk(tree))


def _module_level(body: list[ast.stmt]):
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody"):
                yield from _module_level(getattr(node, block, []))
            for handler in getattr(node, "handlers", []):
                yield from _module_level(handler.body)


def _bound(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _star_source(package: list[str], node: ast.ImportFrom) -> list[str] | None:
    """The in-library module a relative ``from .x import *`` reads, as parts below the top."""
    if not node.level:
        return None
    up = node.level - 1
    if up > len(package):
        return None
    here = package[: len(package) - up]
    return [*here, *(node.module.split(".") if node.module else [])]
