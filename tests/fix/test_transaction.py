"""An interrupted `migrate apply` never leaves a package that cannot be imported, and a
second run finishes the job (issue 32): SIGKILL at several points of the write phase (the
MIGRATE_TEST_KILL_AFTER_WRITES hook of migrate/fix/transaction.py), then every module of
the package is imported in a fresh interpreter."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import env

from migrate.fix.transaction import KILL_HOOK

pytest.importorskip("torch")

MODULES = 40
BODIES = (
    'def f{i}(x):\n    if torch.cuda.is_available():\n        x = x.to("cuda")\n    return x\n',
    "def f{i}(t):\n    n = torch.cuda.device_count()\n    torch.cuda.synchronize()\n    return t, n\n",
    'def f{i}():\n    return torch.device("cuda", torch.cuda.current_device())\n',
    "def f{i}(x):\n    torch.cuda.empty_cache()\n    return x\n",
)


def _package(root: Path) -> Path:
    """``pkg`` with MODULES modules in two folders, using torch.cuda APIs and "cuda"
    strings; some import a sibling."""
    for folder in ("pkg", "pkg/sub"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    for i in range(MODULES):
        package = "pkg" if i % 2 else "pkg.sub"
        folder = root / package.replace(".", "/")
        sibling = f"from {package}.m{i - 2} import f{i - 2}\n" if i >= 2 and i % 5 == 0 else ""
        (folder / f"m{i}.py").write_text(f"import torch\n{sibling}\n\n" + BODIES[i % len(BODIES)].format(i=i))
    return root


def _apply(tree: Path, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "migrate", "apply", str(tree), "--no-cache", "--no-progress", "--jobs", "2"],
        env=env(**extra),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _modules(tree: Path) -> list[str]:
    return sorted(".".join(p.relative_to(tree).with_suffix("").parts) for p in tree.rglob("*.py"))


def _import_failures(tree: Path) -> dict[str, str]:
    """module -> error for every module of the tree that does not import (fresh interpreter)."""
    code = (
        "import importlib, json, sys\n"
        "bad = {}\n"
        "for name in sys.argv[1:]:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as exc:\n"
        "        bad[name] = f'{type(exc).__name__}: {exc}'\n"
        "print(json.dumps(bad))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, *_modules(tree)],
        cwd=tree,
        env=env(PYTHONPATH=str(tree)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _contents(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


def test_apply_killed_at_any_write_leaves_an_importable_package_and_a_rerun_finishes(tmp_path):
    original = _package(tmp_path / "original")
    clean = tmp_path / "clean"
    shutil.copytree(original, clean)
    assert _apply(clean).returncode == 0
    want = _contents(clean)
    assert "pkg/_device.py" in want and b"from pkg._device import" in want["pkg/m1.py"]
    assert not _import_failures(clean)
    before = _contents(original)
    for kill_after in (0, 1, 2, 23):
        tree = tmp_path / f"killed{kill_after}"
        shutil.copytree(original, tree)
        r = _apply(tree, **{KILL_HOOK: str(kill_after)})
        assert r.returncode == -signal.SIGKILL, (kill_after, r.stderr)
        got = _contents(tree)
        changed = [k for k in got if got[k] != before.get(k)]
        assert len(changed) == kill_after, (kill_after, changed)  # the hook counts writes
        if kill_after:  # the helper module is the first file written
            assert "pkg/_device.py" in changed
        assert _import_failures(tree) == {}, kill_after
        again = _apply(tree)
        assert again.returncode == 0, again.stderr
        assert _contents(tree) == want, kill_after
