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
  imported, one installed here) resolves.

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
    if not new:
        return []
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
    return bad


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
