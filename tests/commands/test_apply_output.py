"""`apply --diff` names files as git does, so `git apply` takes the diff whatever the
name: one with a TAB, a line feed, a quote, a backslash, an escape sequence, a bidi
override or bytes that are not UTF-8 is C-quoted (``"a/na\\tme.py"``, octal for the other
bytes), exactly as `git diff` writes it; other names stay as they are."""

from __future__ import annotations

import os
import subprocess

import pytest
from typer.testing import CliRunner

from migrate.cli import app

CODE = "import torch\nx = torch.ones(2).cuda()\n"

QUOTED = {
    "tab": "na\tme.py",
    "line_feed": "na\nme.py",
    "carriage_return": "na\rme.py",
    "quote": 'qu"ote.py',
    "backslash": "back\\slash.py",
    "escape_sequence": "esc\x1b[31m.py",
    "bidi_override": "bidi\u202eyp.py",
    "not_utf8": os.fsdecode(b"lat\xe9.py"),
    "tab_and_utf8": "\u6a21\u578b\t.py",
}
PLAIN = {"space": "sp ace.py", "utf8": "\u6a21\u578b.py", "plain": "plain.py"}


def _git(repo, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-c", "core.quotePath=true", *args], cwd=repo, capture_output=True)


def _repo(tmp_path, name: str):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / name).write_text(CODE)
    assert _git(repo, "init", "-q").returncode == 0
    return repo


def _diff(repo, monkeypatch) -> bytes:
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(app, ["apply", "--diff", "--no-cache", "pkg"])
    assert result.exit_code == 1, result.output  # something would change
    return result.stdout_bytes


def _headers(patch: bytes) -> list[bytes]:
    return [line for line in patch.splitlines() if line.startswith((b"--- ", b"+++ "))]


@pytest.mark.parametrize("case", sorted({**QUOTED, **PLAIN}))
def test_a_diff_of_any_file_name_is_taken_by_git_apply(tmp_path, monkeypatch, case):
    name = {**QUOTED, **PLAIN}[case]
    repo = _repo(tmp_path, name)
    patch = tmp_path / "p.diff"
    patch.write_bytes(_diff(repo, monkeypatch))
    check = _git(repo, "apply", "--check", str(patch))
    assert check.returncode == 0, check.stderr.decode() + patch.read_bytes().decode("utf-8", "replace")
    assert _git(repo, "apply", str(patch)).returncode == 0
    text = (repo / "pkg" / name).read_text()
    assert ".cuda()" not in text and "is_npu_available()" in text  # the file the diff names


@pytest.mark.parametrize("case", sorted(QUOTED))
def test_a_quoted_name_is_written_as_git_diff_writes_it(tmp_path, monkeypatch, case):
    name = QUOTED[case]
    repo = _repo(tmp_path, name)
    ours = _headers(_diff(repo, monkeypatch))
    assert _git(repo, "add", "-A").returncode == 0
    assert _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x").returncode == 0
    assert CliRunner().invoke(app, ["apply", "--no-cache", "pkg"]).exit_code == 0
    theirs = _headers(_git(repo, "diff", "--no-color").stdout)
    changed = [h for h in ours if b"pkg/" in h]
    assert changed and set(changed) <= set(theirs)
    assert all(h[4:5] == b'"' for h in changed)
    assert b"\t" not in b"".join(ours) and all(32 <= b < 127 for b in b"".join(changed))
