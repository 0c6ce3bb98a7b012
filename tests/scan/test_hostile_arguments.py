"""Hostile arguments and project files for scan and apply (issue 18, second pass): a path
that is no file or folder, a project config apply cannot read, a .gitignore pattern that
would backtrack. Each case failed before its fix."""

from __future__ import annotations

import os

import pytest
from hostile import CUDA, bounded_main, main


def _loop(tmp_path):
    os.symlink(tmp_path / "l2", tmp_path / "l1")
    os.symlink(tmp_path / "l1", tmp_path / "l2")
    return tmp_path / "l1"


def _fifo(tmp_path):
    os.mkfifo(tmp_path / "f.py")
    return tmp_path / "f.py"


@pytest.mark.parametrize("command", ["scan", "apply"])
@pytest.mark.parametrize(
    "make", [lambda tmp: "/dev/zero", _loop, _fifo], ids=["device", "symlink-loop", "fifo"]
)
def test_a_path_that_is_no_file_or_folder_is_a_usage_error(tmp_path, capsys, command, make):
    # /dev/zero was "All checks passed! (0 files scanned)", exit 0: a silent loss
    code, out, err = main(capsys, command, make(tmp_path), "--no-cache", "--no-progress")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "All checks passed" not in out


@pytest.mark.parametrize(
    "pyproject",
    [b"[tool.migrate]\nexclude = ['a.py']\nx = [\n", b"[tool.migrate]\nexclude = ['\xff']\n"],
    ids=["invalid-toml", "not-utf8"],
)
def test_apply_refuses_a_project_config_it_cannot_read(tmp_path, capsys, pyproject):
    # apply rewrote a.py that the unreadable config excludes
    (tmp_path / "a.py").write_text(CUDA)
    (tmp_path / "pyproject.toml").write_bytes(pyproject)
    code, _, err = main(capsys, "apply", tmp_path, "--no-cache", "--no-progress")
    assert code == 2 and "pyproject.toml" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "a.py").read_text() == CUDA
    code, out, _ = main(capsys, "scan", tmp_path, "--no-cache", "--no-progress")
    assert code == 1 and "pyproject.toml" in out  # scan still reports it as a file error


def test_a_gitignore_run_of_stars_does_not_backtrack(tmp_path):
    # "*" * 5000 + "a" took minutes in pathspec's regex; git reads the run as one '*'
    (tmp_path / "a.py").write_text(CUDA)
    (tmp_path / "keep.py").write_text(CUDA)
    (tmp_path / ".gitignore").write_text("*" * 5000 + "a.py\n" + "**/" * 500 + "x\n")
    code, out, err = bounded_main(
        "scan", tmp_path, "--no-cache", "--no-progress", "--format", "json", seconds=900
    )
    assert code == 1, err
    assert '"keep.py"' in out and '"a.py"' not in out


@pytest.mark.parametrize("command", ["scan", "apply"])
def test_a_pyproject_integer_past_the_digit_limit_is_no_crash(tmp_path, capsys, command):
    # was "internal error: ValueError: Exceeds the limit (4300 digits)"
    (tmp_path / "a.py").write_text(CUDA)
    (tmp_path / "pyproject.toml").write_text("[tool.migrate]\nx = " + "9" * 5000 + "\n")
    code, out, err = main(capsys, command, tmp_path, "--no-cache", "--no-progress")
    assert (code, command) in ((1, "scan"), (2, "apply")), err
    assert "pyproject.toml" in out + err
    assert (tmp_path / "a.py").read_text() == CUDA
