"""Does a ported file still start? The imports a port added, resolved the way the file runs.

Used by bench_upstream.py. A new import counts as unresolved when the file, run as it ran
before the port, cannot find it:

* a module of the project (a top-level name the parent checkout holds) must exist under the
  file's own folder (``sys.path[0]`` of a script run by path) or, when the project is
  installable (``pyproject.toml`` / ``setup.py`` / ``setup.cfg``) or the file already imported
  the project by absolute name, under the checkout's root or ``src/``;
* a relative import needs an ``__init__.py`` beside the file and its target, and fails in a
  script run by path (a ``__main__`` block and no relative import before the port);
* anything else (the standard library, torch, torch_npu, a library the file already
  imported, one installed here) resolves;
* a name imported from a module of the project must be bound there (a def, a class, an
  assignment, an import, a submodule), e.g. ``from pkg.device import is_npu_available`` when
  the parent's ``pkg.device`` has no such name.

``undefined`` adds the names the port uses that nothing binds (ruff's F821, old against new),
e.g. a helper calling ``torch`` in a file that imports torch only inside a function.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

_ALWAYS = {"torch", "torch_npu", "__future__"}
_PACKAGING = ("pyproject.toml", "setup.py", "setup.cfg")


def _imports(text: str) -> set[tuple[int, str]]:
    """(level, module) of every import in the text (``from x import a``: x; ``from . import a``: a)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    found: set[tuple[int, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update((0, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.module:
                found.add((node.level, node.module))
            else:
                found.update((node.level, a.name) for a in node.names)
    return found


def _from_names(text: str) -> set[tuple[int, str, str]]:
    """(level, module, name) of every ``from module import name``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    return {
        (n.level, n.module or "", a.name)
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module
        for a in n.names
        if a.name != "*"
    }


def _source(root: Path, parts: list[str]) -> Path | None:
    here = root.joinpath(*parts)
    if (here / "__init__.py").is_file():
        return here / "__init__.py"
    return here.with_suffix(".py") if here.with_suffix(".py").is_file() else None


def _binds(path: Path, name: str) -> bool:
    """Whether the module at ``path`` binds ``name`` (or may: ``__getattr__``, ``import *``)."""
    if (path.parent / name).is_dir() or (path.parent / f"{name}.py").is_file():
        return path.name == "__init__.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in (
            name,
            "__getattr__",
        ):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name == "*" or (a.asname or a.name).split(".")[0] == name for a in node.names):
                return True
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False


def _missing_names(old: str, port: str, where: Path, roots: list[Path]) -> list[str]:
    """``from M import n`` lines the port added where the project's M does not bind n."""
    bad = []
    for level, mod, name in sorted(_from_names(port) - _from_names(old)):
        bases = roots if not level else [where.parents[level - 2] if level > 1 else where]
        for base in bases:
            src = _source(base, mod.split("."))
            if src is not None:
                if not _binds(src, name):
                    bad.append(f"{'.' * level}{mod}.{name} (not in the module)")
                break
    return bad


def _found(root: Path, parts: list[str]) -> bool:
    """``parts`` as a module (a package folder or a ``.py`` file) under ``root``."""
    here = root
    for i, part in enumerate(parts):
        if (here / part).is_dir():
            here = here / part
            continue
        return i == len(parts) - 1 and (here / f"{part}.py").is_file()
    return True


def _project_tops(tree: Path) -> set[str]:
    tops: set[str] = set()
    for base in (tree, tree / "src"):
        if base.is_dir():
            tops.update(p.stem if p.suffix == ".py" else p.name for p in base.iterdir())
    return tops - {"tests", "test", "docs", "setup"}


def _has_main(text: str) -> bool:
    return "__name__" in text and "__main__" in text


def unresolved(old: str, port: str, where: Path, tree: Path, pristine: Path) -> list[str]:
    """The imports ``port`` added that do not resolve. ``where``: the ported file's folder;
    ``tree``: the checkout it was ported in (``where`` itself when ported alone);
    ``pristine``: the parent's checkout (the project as installed, without the port)."""
    before = _imports(old)
    new = _imports(port) - before
    tops = _project_tops(pristine)
    packaged = any((pristine / f).is_file() for f in _PACKAGING)
    uses_project = any(lvl == 0 and mod.split(".")[0] in tops for lvl, mod in before)
    roots = [where]
    if packaged or uses_project:
        roots += [pristine, pristine / "src"] if tree == where else [tree, tree / "src"]
    had_relative = any(lvl for lvl, _ in before)
    bad = []
    for level, mod in sorted(new):
        parts = [p for p in mod.split(".") if p]
        if level:
            base = where
            for _ in range(level - 1):
                base = base.parent
            ok = (base / "__init__.py").is_file() and (not parts or _found(base, parts))
            ok = ok and (had_relative or not _has_main(old))
        elif parts[0] in tops or not _external(parts[0], before):
            ok = any(_found(r, parts) for r in roots)
        else:
            ok = True
        if not ok:
            bad.append("." * level + mod)
    project = [pristine, pristine / "src"] if tree == where else [tree, tree / "src"]
    return bad + _missing_names(old, port, where, [where, *project])


def _external(top: str, before: set[tuple[int, str]]) -> bool:
    if top in _ALWAYS or top in sys.stdlib_module_names:
        return True
    if any(lvl == 0 and mod.split(".")[0] == top for lvl, mod in before):
        return True
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _ruff() -> str | None:
    here = Path(sys.executable).parent / "ruff"
    return str(here) if here.is_file() else shutil.which("ruff")


def _undefined_names(text: str) -> Counter[str]:
    ruff = _ruff()
    if ruff is None:
        return Counter()
    cmd = [ruff, "check", "--isolated", "--no-cache", "--select", "F821", "--output-format", "json", "-"]
    cmd += ["--stdin-filename", "port.py", "--exit-zero"]
    out = subprocess.run(cmd, input=text.encode(), capture_output=True, check=False)
    try:
        rows = json.loads(out.stdout or b"[]")
    except json.JSONDecodeError:
        return Counter()
    return Counter(r["message"].split("`")[1] if "`" in r["message"] else r["message"] for r in rows)


def undefined(old: str, port: str) -> list[str]:
    """Names the port uses that nothing binds and the old file did not lack."""
    if old == port:
        return []
    return sorted((_undefined_names(port) - _undefined_names(old)).keys())
