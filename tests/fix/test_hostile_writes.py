"""Apply writes stay inside the tree at write time, and its diffs apply with git (issue 18).
Each test names the repro it guards."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile import CUDA, env, migrate

PORTED = CUDA.replace("torch.cuda", "torch.npu")


def _waiting_on(path: Path, pid: int, timeout: float = 900) -> None:
    """Until process ``pid`` waits for the flock on ``path`` (/proc/locks shows waiters)."""
    ino = os.stat(path).st_ino
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open("/proc/locks") as fh:
            for line in fh:
                if "->" in line and f":{ino} " in line and f" {pid} " in line:
                    return
        time.sleep(0.05)
    raise AssertionError("apply never waited for the lock")


def _apply_while_locked(tree: Path, swap) -> subprocess.CompletedProcess:
    """Run apply on ``tree`` while a.py is locked; once apply waits, ``swap()``, unlock."""
    lock = os.open(tree / "a.py", os.O_RDONLY)
    fcntl.flock(lock, fcntl.LOCK_EX)
    proc = subprocess.Popen(
        [sys.executable, "-m", "migrate", "apply", "--target", "npu", "--no-cache", "--jobs", "1", str(tree)],
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _waiting_on(tree / "a.py", proc.pid)
        swap()
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)
    out, err = proc.communicate(timeout=900)
    assert "Traceback" not in err, err
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="needs /proc/locks")
def test_a_file_swapped_for_a_symlink_during_apply(tmp_path):  # repro: swap b.py
    tree, out = tmp_path / "D", tmp_path / "out"
    tree.mkdir()
    out.mkdir()
    (tree / "a.py").write_text(CUDA)
    (tree / "b.py").write_text(CUDA)
    (out / "victim.py").write_text(CUDA)

    def swap():
        os.unlink(tree / "b.py")
        os.symlink(out / "victim.py", tree / "b.py")

    r = _apply_while_locked(tree, swap)
    assert (out / "victim.py").read_text() == CUDA
    assert (tree / "a.py").read_text() == PORTED
    assert r.returncode == 1 and "b.py" in r.stderr


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="needs /proc/locks")
def test_a_folder_swapped_for_a_symlink_during_apply(tmp_path):  # repro: swap a sub-folder
    tree, out = tmp_path / "D", tmp_path / "out"
    (tree / "sub").mkdir(parents=True)
    out.mkdir()
    (tree / "a.py").write_text(CUDA)
    (tree / "sub" / "b.py").write_text(CUDA)
    (out / "b.py").write_text(CUDA)

    def swap():
        shutil.rmtree(tree / "sub")
        os.symlink(out, tree / "sub")

    r = _apply_while_locked(tree, swap)
    assert (out / "b.py").read_text() == CUDA
    assert r.returncode == 1 and "sub/b.py" in r.stderr


@pytest.mark.parametrize("command", ["apply", "scan"])
def test_an_empty_path_is_a_usage_error(tmp_path, command):  # repro: apply ""
    (tmp_path / "a.py").write_text(CUDA)
    r = migrate(command, "", "--no-cache", cwd=tmp_path)
    assert r.returncode == 2 and "empty" in r.stderr
    assert (tmp_path / "a.py").read_text() == CUDA
    r = migrate(command, tmp_path, "", "--no-cache", cwd=tmp_path)
    assert r.returncode == 2 and (tmp_path / "a.py").read_text() == CUDA


ODD = {
    "bom": "\ufeffimport torch\ntorch.cuda.synchronize()\n",
    "form_feed": "import torch\n\x0c\ntorch.cuda.synchronize()\n",
    "line_separator": "import torch\nx = '\u2028'\ntorch.cuda.synchronize()\n",
    "nel_and_vt": "import torch\nx = '\x85\x0b\x1c'\ntorch.cuda.synchronize()\n",
    "crlf": "import torch\r\ntorch.cuda.synchronize()\r\n",
    "no_newline": "import torch\ntorch.cuda.synchronize()",
}


def _apply(tree: Path, write: bool):
    from migrate.core.rules import default_rules
    from migrate.core.targets import TargetChoice
    from migrate.fix.rewrite import Options
    from migrate.fix.run import apply_scan
    from migrate.scan.engine import ScanOptions, scan_paths

    npu = TargetChoice("npu")
    result = scan_paths([tree], ScanOptions(jobs=1, targets=npu))
    return apply_scan(result, tree, list(default_rules()), Options(write=write, targets=npu))


@pytest.mark.parametrize("name", sorted(ODD))
def test_diff_applies_with_git(tmp_path, name):  # repro: --diff that git apply rejects
    from migrate.commands.apply_output import unified_diff

    data = ODD[name].encode("utf-8")
    tree, clean = tmp_path / "t", tmp_path / "clean"
    for folder in (tree, clean):
        folder.mkdir()
        (folder / "a.py").write_bytes(data)
    run = _apply(tree, write=False)  # what --diff prints
    patch = tmp_path / "p.diff"
    patch.write_bytes("".join(unified_diff(o) for o in run.changed).encode("utf-8"))
    assert (tree / "a.py").read_bytes() == data and patch.stat().st_size
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    git = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", str(patch)], cwd=tree, capture_output=True, text=True
    )
    assert git.returncode == 0, git.stderr + patch.read_text()
    _apply(clean, write=True)
    assert (tree / "a.py").read_bytes() == (clean / "a.py").read_bytes()
