"""Where a file already has a way to ask "is an Ascend NPU in use here?".

A portable port spells the NPU side of a device decision with the check the code already
has, as upstream ports do (``"npu" if is_torch_npu_available() else "cuda"``,
``elif is_npu_available():``):

* a library's check the file imports (rules/npu_checks.yaml: accelerate.utils,
  transformers, mmengine.device ...), or imports from where the file imports other names of
  that library's module (added to that import) -- where that library's source is in the
  scanned tree (the file is part of it, or it lies beside), only if its module defines or
  exports the check there (migrate/scan/library_checks.py ``absent_checks``): mmengine before #572 had no
  ``mmengine.device.is_npu_available``, and importing it broke the whole library;
* a library's check where the file imports another module of that library at top level
  (``transformers.utils.versions``: ``from transformers.utils import is_torch_npu_available``)
  and the installed library has it (``installed_exports``), never from the file's own package;
* a function of the file's own with a check's name and no required argument
  (FunASR's ``is_npu_available()``);
* the project's family of device checks (migrate/scan/check_family.py): in the module
  defining it, its NPU member (added there by the family rule where it lacks one); in a file
  importing from that module or a package re-exporting it, that member, added to the import
  (mmengine's ``from mmengine.device import is_mlu_available, is_npu_available``); in a
  file importing that module (or package) whole, that member through it
  (``import mmengine.device.utils as dev``: ``dev.is_npu_available()``);
* a library's check the file's package imports elsewhere at top level (trl's modules:
  ``from transformers import is_torch_npu_available``, ``FileDevices.library_checks``), where
  the file has none of the above: imported the same way (``package_check``), the most imported one;
* in a script with neither, the port's own one-function check (``is_npu_available`` in
  migrate/core/device_helpers/template.py), defined once after the imports.
"""

from __future__ import annotations

import ast

from migrate.core.import_names import resolved_module
from migrate.scan.check_family import is_cuda_member, is_family, members_in_tree, npu_member, npu_name
from migrate.scan.library_checks import installed_exports, npu_checks

# names a function of the file's own answers the question by (no required argument)
CHECK_NAMES = ("is_npu_available", "is_torch_npu_available", "npu_is_available")


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
    module (``from accelerate.utils import is_xpu_available``): the port imports it there;
    else where the file imports another module of that library at top level (a dependency
    it already has) and the installed library has the check: the port imports it beside."""
    table = usable_checks(f)
    for stmt in f.tree.body:
        if isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module in table:
            if not any(a.name == "*" for a in stmt.names):
                return stmt.module, table[stmt.module]
    fd = getattr(f, "file_devices", None)
    own = fd.package if fd is not None else None
    for module in _imported_modules(f.tree.body):
        sibling = _sibling(module, table)
        if sibling is not None and sibling.split(".")[0] != own:
            if installed_exports(sibling, table[sibling]):
                return sibling, table[sibling]
    return None


@_once
def package_check(f) -> tuple[str, str] | None:
    """(module, name) of the library's NPU check the file's package imports at top level in
    its other modules (``FileDevices.library_checks``: the most imported first, none from the
    package itself), where the scanned tree's or installed copy of the library has it
    (``usable_checks``): the port imports it in this file as they do."""
    fd = getattr(f, "file_devices", None)
    if fd is None or not fd.library_checks:
        return None
    table = usable_checks(f)
    for module, name in fd.library_checks:
        if table.get(module) == name and module.split(".")[0] != fd.package:
            return module, name
    return None


def _imported_modules(body: list[ast.stmt]):
    """The modules a module's top-level absolute imports name, in order."""
    for stmt in body:
        if isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
            yield stmt.module
        elif isinstance(stmt, ast.Import):
            yield from (a.name for a in stmt.names)


def _sibling(module: str, table: dict[str, str]) -> str | None:
    """The table's module of the library ``module`` belongs to, where the file imports
    another of its modules (``transformers.utils.versions``: ``transformers.utils``, as
    ms-swift's engineers imported it): the longest one ``module`` lies in, else the
    library's shortest; never the file's own package (importing it there may be circular)."""
    top = module.split(".")[0]
    same = [t for t in table if t.split(".")[0] == top]
    inside = [t for t in same if module == t or module.startswith(t + ".")]
    if inside:
        return max(inside, key=len)
    return min(same, key=len) if same else None


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


@_once
def family_check(f) -> tuple[str, str | None] | None:
    """(name, the import binding it or None) of the project's NPU member of its family of
    device checks: this file's own family (its module, or a file handed over alone that
    defines one), else the project's where the file imports from its module or a package
    exporting it; None where neither."""
    members = members_in_tree(f.tree)
    if is_family(members) or npu_member(members):
        return npu_name(members), None
    fd = getattr(f, "file_devices", None)
    family = fd.family if fd is not None else None
    own = (fd.module if fd is not None else None) or ""  # "": a script using the package
    if family is None or own == family.module:
        return None
    sources = {family.module, *family.publics}
    package = f.rel.endswith("__init__.py")
    found: list[tuple[int, ast.ImportFrom]] = []
    for stmt in f.tree.body:
        if not isinstance(stmt, ast.ImportFrom) or any(a.name == "*" for a in stmt.names):
            continue
        module = resolved_module(stmt, own, package)
        if module is None or module not in sources:
            continue
        bound = next((a.asname or a.name for a in stmt.names if a.name == family.name), None)
        if bound is not None:
            return bound, None  # a second run: imported already
        if not _encloses(module, own):
            found.append((0 if module == family.module else 1, stmt))
    if not found:
        return None
    stmt = min(found, key=lambda pair: pair[0])[1]  # the defining module's import first
    return family.name, f"from {'.' * stmt.level + (stmt.module or '')} import {family.name}"


def _encloses(module: str, own: str) -> bool:
    """Is ``module`` a package the file belongs to (``from . import logging`` in
    diffusers/utils/torch_utils.py)? Its ``__init__`` runs while it imports the file: a
    name added there may not be bound yet (circular); the import is left as written."""
    return own == module or own.startswith(module + ".")


@_once
def family_cuda_members(f) -> frozenset[str]:
    """The names the file calls the family's CUDA member by (``is_cuda_available``): its
    own, in the module defining the family, or imported from there (or a package exporting
    it) where the port tests with the family's NPU member (``family_check``); and through a
    module it imports as a whole (``dev.is_cuda_available``: ``family_modules``)."""
    members = members_in_tree(f.tree)
    if is_family(members):
        return frozenset(m for m in members if is_cuda_member(m))
    fd = getattr(f, "file_devices", None)
    family = fd.family if fd is not None else None
    own = (fd.module if fd is not None else None) or ""
    if family is None:
        return frozenset()
    out: set[str] = set()
    if is_cuda_member(family.anchor):
        out |= {f"{local}.{family.anchor}" for local in family_modules(f)}
    if family_check(f) is None:
        return frozenset(out)
    sources = {family.module, *family.publics}
    package = f.rel.endswith("__init__.py")
    for stmt in f.tree.body:
        if isinstance(stmt, ast.ImportFrom) and resolved_module(stmt, own, package) in sources:
            out |= {a.asname or a.name for a in stmt.names if is_cuda_member(a.name)}
    return frozenset(out)


@_once
def family_modules(f) -> tuple[str, ...]:
    """How the file spells the family's module, or a package exporting it, where a
    top-level import binds it whole (``import pkg.device.utils as dev``: ``dev``; ``from
    pkg import device``: ``device``; ``import pkg.device``: ``pkg.device``): it asks the
    family through it (``dev.is_cuda_available()``) and gets the NPU member there too. Not
    in the family's module, nor a package the file belongs to (its ``__init__`` may still be
    running when the file is imported)."""
    fd = getattr(f, "file_devices", None)
    family = fd.family if fd is not None else None
    own = (fd.module if fd is not None else None) or ""
    if family is None or own == family.module:
        return ()
    sources = {family.module, *family.publics}
    package = f.rel.endswith("__init__.py")
    out: list[str] = []  # in file order
    for stmt in f.tree.body:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.name in sources and not _encloses(a.name, own) and (a.asname or "." in a.name):
                    out.append(a.asname or a.name)
        elif isinstance(stmt, ast.ImportFrom):
            base = resolved_module(stmt, own, package)
            for a in stmt.names if base is not None else ():
                module = f"{base}.{a.name}"
                if module in sources and not _encloses(module, own):
                    out.append(a.asname or a.name)
    return tuple(dict.fromkeys(out))


def family_through(f) -> str | None:
    """``dev.is_npu_available``: the family's NPU member through the first module the file
    imports whole (``family_modules``), where it imports none of its names; else None."""
    found = family_modules(f)
    if not found or family_check(f) is not None:
        return None
    return f"{found[0]}.{f.file_devices.family.name}"


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` of a chain of names (None for anything else)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def asks_family_cuda(f, test: ast.expr) -> bool:
    """Is ``test`` a call of the family's CUDA member, without arguments?"""
    return (
        isinstance(test, ast.Call)
        and not test.args
        and not test.keywords
        and isinstance(test.func, (ast.Name, ast.Attribute))
        and _dotted(test.func) in family_cuda_members(f)
    )


def family_attribute_check(f, test: ast.expr) -> str | None:
    """``dev.is_npu_available`` where ``test`` asks the family's CUDA member through a
    module the file imports whole (``dev.is_cuda_available()``, ``family_modules``): the
    NPU member through the same module; else None."""
    if not (
        asks_family_cuda(f, test) and isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute)
    ):
        return None
    fd = getattr(f, "file_devices", None)
    family = fd.family if fd is not None else None
    local = _dotted(test.func.value)
    if family is None or local not in family_modules(f):
        return None
    return f"{local}.{family.name}"
