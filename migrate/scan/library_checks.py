"""The libraries' NPU checks (rules/npu_checks.yaml) and whether the scanned tree's copy of
a library has its check: read by the project context (migrate/scan/project/) for each folder
of scanned code, and by the portable port (migrate/scan/python/npu_checks.py), which
imports a check only from a module that defines or exports it.
"""

from __future__ import annotations

import ast
import importlib.util
import os
from functools import cache
from pathlib import Path

import yaml

from migrate.core.resources import rules_dir


@cache
def npu_checks() -> dict[str, str]:
    """module -> the function it exports that tells whether an NPU is usable
    (rules/npu_checks.yaml)."""
    data = yaml.safe_load((rules_dir() / "npu_checks.yaml").read_text(encoding="utf-8")) or {}
    return {str(k): str(v) for k, v in (data.get("npu_checks") or {}).items()}


@cache
def library_tops() -> frozenset[str]:
    """The libraries the table's checks come from (``transformers``, ``accelerate`` ...): a
    port's import from one goes among a file's third-party imports."""
    return frozenset(module.split(".")[0] for module in npu_checks())


_MAX_BYTES = 2_000_000  # a module read to find a name: larger ones are not read
_MAX_STARS = 3  # `from .x import *` followed this deep


def absent_checks(folders: list[Path]) -> frozenset[str]:
    """The table's modules whose library has its source in one of ``folders`` (the folder
    of a scanned file and its parents: ``<folder>/<top>/__init__.py`` or under ``src/``) and
    whose module there neither defines nor exports the check: a port importing it would
    fail (ImportError) against that code. A library not in the tree is judged by its installed
    copy (``_installed``); one found nowhere counts as lacking it: nothing shows which release
    the file was written for (mmengine/dist/utils.py handed over alone, from before #572),
    so the port uses its own one-function check, which reads the same at the call."""
    out = set()
    for module, name in npu_checks().items():
        top = module.split(".")[0]
        bases = (_library_in(folder, top) for folder in folders)
        base = next((b for b in bases if b is not None), None)
        if base is not None:
            if not _exports(base, module.split(".")[1:], name, _MAX_STARS):
                out.add(module)
        elif not installed_exports(module, name):  # read once per scan, not once per folder
            out.add(module)
    return frozenset(out)


@cache
def installed_exports(module: str, name: str) -> bool:
    """Whether the installed copy of ``module``'s library defines or exports ``name`` there:
    a check the port may import into a file that imports only another module of it."""
    base = _installed(module.split(".")[0])
    return base is not None and _exports(base, module.split(".")[1:], name, _MAX_STARS)


@cache
def _installed(top: str) -> Path | None:
    """The folder of the package ``top`` as installed beside this tool (found, never
    imported): a library whose source is not in the scanned tree is judged by the copy the
    user runs, so a port does not import a check an older release lacks."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    base = Path(locations[0]) if locations else None
    return base if base is not None and (base / "__init__.py").is_file() else None


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
    if any(isinstance(c, ast.Constant) and c.value == name for c in ast.walk(tree)):
        return True  # one walk: transformers' lazy __init__ names it before its star imports
    package = parts if path.name == "__init__.py" else parts[:-1]
    for node in _module_level(tree.body):
        if name in _bound(node):
            return True
        if isinstance(node, ast.ImportFrom) and stars and any(a.name == "*" for a in node.names):
            inner = _star_source(package, node)
            if inner is not None and _exports(base, inner, name, stars - 1):
                return True
    return False


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
