"""A standard stream closed by the caller (``migrate scan a.py >&-``): the report cannot be
written, which is one line on stderr and exit 2 (as ruff), never a traceback; a report to
``-o FILE`` needs no stdout; a file the command opens never takes the closed descriptor."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = "import torch\nx = torch.zeros(2).cuda()\n"
CANNOT = "migrate: error: cannot write the report to stdout: Bad file descriptor\n"


def _sh(tmp_path: Path, command: str) -> subprocess.CompletedProcess:
    """``python -m migrate COMMAND`` run by sh, with its redirections (``>&-`` closes fd 1)."""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env["MIGRATE_CACHE_DIR"] = str(tmp_path / "cache")
    return subprocess.run(
        ["sh", "-c", f'exec "{sys.executable}" -m migrate {command}'],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("source", [SOURCE, "print(1)\n"])  # findings, and nothing found
@pytest.mark.parametrize("extra", ["", "--format json", "--no-cache"])
def test_scan_with_stdout_closed_is_one_line_and_exit_2(tmp_path, source, extra):
    (tmp_path / "a.py").write_text(source)
    res = _sh(tmp_path, f"scan a.py {extra} >&-")
    assert (res.returncode, res.stderr) == (2, CANNOT)


def test_a_second_run_replayed_from_the_memo_fails_the_same_way(tmp_path):
    (tmp_path / "a.py").write_text(SOURCE)
    assert _sh(tmp_path, "scan a.py").returncode == 1  # remembered
    res = _sh(tmp_path, "scan a.py >&-")
    assert (res.returncode, res.stderr) == (2, CANNOT)


def test_apply_diff_with_stdout_closed_changes_nothing(tmp_path):
    (tmp_path / "a.py").write_text(SOURCE)
    res = _sh(tmp_path, "apply --diff a.py >&-")
    assert (res.returncode, res.stderr) == (2, "migrate: error: cannot write output: Bad file descriptor\n")
    assert (tmp_path / "a.py").read_text() == SOURCE


def test_a_report_to_a_file_needs_no_stdout(tmp_path):
    (tmp_path / "a.py").write_text(SOURCE)
    res = _sh(tmp_path, "scan a.py -o report.txt >&-")
    assert (res.returncode, res.stderr) == (1, "")
    assert "MIG202" in (tmp_path / "report.txt").read_text()


def test_stderr_or_stdin_closed_changes_nothing_of_the_report(tmp_path):
    (tmp_path / "a.py").write_text(SOURCE)
    want = _sh(tmp_path, "scan a.py --no-cache")
    assert want.returncode == 1 and "MIG202" in want.stdout
    for redirect in ("2>&-", "<&-", "<&- 2>&-"):
        res = _sh(tmp_path, f"scan a.py --no-cache {redirect}")
        assert (res.returncode, res.stdout, res.stderr) == (1, want.stdout, ""), redirect
    res = _sh(tmp_path, "scan a.py >&- 2>&-")  # nowhere to say it: the status says it
    assert (res.returncode, res.stdout, res.stderr) == (2, "", "")
