"""A finished scan is remembered (migrate/scan/run_memo.py): the same command on the same
files replays its report without starting the scan, and any change it depended on runs the
scan again. Each run is a real `python -m migrate` process; whether it replayed is seen in
its -X importtime trace (a replay imports no typer)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from migrate.scan import run_memo

CUDA = "import torch\n\n\ndef f(x):\n    return x.cuda()\n"
PLAIN = "def g(x):\n    return x + 1\n"


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "model.py").write_text(CUDA)
    (root / "pkg" / "util.py").write_text(PLAIN)
    (root / "pyproject.toml").write_text('[project]\nname = "proj"\n')
    (root / ".git").mkdir()  # the config search stops here
    time.sleep(run_memo.RACY_NS / 1e9 + 0.1)  # older than a run's racy window
    return root


def _scan(root: Path, cache: Path, *args: str) -> tuple[subprocess.CompletedProcess, bool, dict]:
    out = cache.parent / "report.json"  # outside every folder the scan looks into
    env = {**os.environ, "MIGRATE_CACHE_DIR": str(cache), "MIGRATE_CACHE_KEY": "k" * 40}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "migrate", "scan", str(root), "--format", "json"]
        + ["-o", str(out), "--no-progress", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,
    )
    replayed = "typer" not in done.stderr
    return done, replayed, json.loads(out.read_text()) if out.exists() else {}


def _rules(report: dict) -> list[tuple[str, str]]:
    return sorted((f["path"], f["rule"]) for f in report["findings"])


def test_an_unchanged_tree_replays_the_same_report(tmp_path):
    root, cache = _tree(tmp_path), tmp_path / "cache"
    first, replayed, report = _scan(root, cache)
    assert first.returncode == 1 and not replayed
    assert [path for path, _ in _rules(report)] == ["pkg/model.py"]
    assert list(cache.glob("run-*.json")), "the finished run was not remembered"
    again, replayed, same = _scan(root, cache)
    assert replayed and again.returncode == 1
    assert same == report
    other, replayed, _ = _scan(root, cache, "--exit-zero")  # other arguments: another memo
    assert not replayed and other.returncode == 0


@pytest.mark.parametrize(
    "change",
    [
        "edit a scanned file",
        "add a file",
        "remove a file",
        "ignore the rule in pyproject.toml",
        "gitignore the file",
    ],
)
def test_a_change_the_scan_depends_on_scans_again(tmp_path, change):
    root, cache = _tree(tmp_path), tmp_path / "cache"
    _, _, before = _scan(root, cache)
    assert _scan(root, cache)[1], "the second run should replay"
    model = root / "pkg" / "model.py"
    if change == "edit a scanned file":
        model.write_text(CUDA + "\n\ndef h(x):\n    return x.cuda()\n")
    elif change == "add a file":
        (root / "pkg" / "more.py").write_text(CUDA)
    elif change == "remove a file":
        model.unlink()
    elif change == "ignore the rule in pyproject.toml":
        rule = before["findings"][0]["rule"]
        (root / "pyproject.toml").write_text(f'[tool.migrate]\nignore = ["{rule}"]\n')
    else:
        (root / ".gitignore").write_text("pkg/model.py\n")
    done, replayed, after = _scan(root, cache)
    assert not replayed, change
    assert after != before, change
    fresh = subprocess.run(
        [sys.executable, "-m", "migrate", "scan", str(root), "--format", "json", "--no-cache"],
        capture_output=True,
        text=True,
        cwd=root.parent,
    )
    assert _rules(after) == _rules(json.loads(fresh.stdout)), change


def test_a_config_in_a_folder_above_the_scanned_one_scans_again(tmp_path):
    """The config is looked for above the scanned folder, in folders the walk never lists."""
    root, cache = _tree(tmp_path), tmp_path / "cache"
    (root / "pyproject.toml").unlink()
    time.sleep(run_memo.RACY_NS / 1e9 + 0.1)
    pkg = root / "pkg"
    _, _, before = _scan(pkg, cache)
    assert before["findings"] and _scan(pkg, cache)[1]
    (root / "pyproject.toml").write_text("[tool.migrate]\nignore = ['MIG']\n")
    _, replayed, after = _scan(pkg, cache)
    assert not replayed and not after["findings"]


def test_a_tampered_memo_is_not_replayed(tmp_path):
    root, cache = _tree(tmp_path), tmp_path / "cache"
    _, _, report = _scan(root, cache)
    (memo,) = cache.glob("run-*.json")
    doc = json.loads(memo.read_text())
    doc["report"] = doc["report"].replace("MIG", "XYZ")
    memo.write_text(json.dumps(doc))
    _, replayed, again = _scan(root, cache)
    assert not replayed and again == report


def test_a_run_over_files_changed_moments_ago_is_not_remembered(tmp_path):
    root, cache = _tree(tmp_path), tmp_path / "cache"
    model = root / "pkg" / "model.py"
    model.write_text(CUDA)  # its mtime and ctime: now
    future = time.time_ns() + 3600 * 10**9  # after the run's start however late it starts:
    os.utime(model, ns=(future, future))  # no start-up race with RACY_NS
    _scan(root, cache)
    assert not list(cache.glob("run-*.json"))


def test_stdout_reports_replay_byte_for_byte(tmp_path):
    root, cache = _tree(tmp_path), tmp_path / "cache"
    env = {**os.environ, "MIGRATE_CACHE_DIR": str(cache), "MIGRATE_CACHE_KEY": "k" * 40}
    cmd = [sys.executable, "-m", "migrate", "scan", str(root), "--no-progress"]
    first = subprocess.run(cmd, capture_output=True, env=env, cwd=tmp_path)
    second = subprocess.run(cmd, capture_output=True, env=env, cwd=tmp_path)
    assert list(cache.glob("run-*.json"))
    assert (second.returncode, second.stdout) == (first.returncode, first.stdout)
    assert b"MIG" in first.stdout


@pytest.mark.parametrize("kind", ["fifo", "folder", "symlink", "garbage", "nested", "huge", "wrong shape"])
def test_a_hostile_memo_is_never_replayed(tmp_path, monkeypatch, capsys, kind):
    """Whatever sits at the memo's name is read bounded, never blocks, and is ignored
    unless it is a regular file holding an entry this user's key signed: a corrupt one with
    a note naming it (core/cache_files.py), one signed by another key quietly."""
    monkeypatch.setenv("MIGRATE_CACHE_KEY", "k" * 40)
    monkeypatch.chdir(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    argv = ["scan", "proj", "--cache-dir", str(cache)]
    path = run_memo._memo_path(cache, run_memo._key_of(argv))
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "symlink":
        (tmp_path / "elsewhere.json").write_text("{}")
        path.symlink_to(tmp_path / "elsewhere.json")
    elif kind == "garbage":
        path.write_bytes(b"\xff\x00not json")
    elif kind == "nested":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "huge":
        with open(path, "wb") as fh:
            fh.truncate(run_memo.MAX_ENTRY_BYTES + 1)
    else:
        path.write_text(json.dumps({"format": run_memo.FORMAT, "report": 1, "deps": "x", "mac": "0"}))
    assert run_memo.replay(argv) is None
    err = capsys.readouterr().err
    if kind == "wrong shape":  # its MAC does not check: another key's, not corrupt
        assert err == ""
    else:
        assert f"migrate: note: cache file {path}: " in err and err.endswith("; ignored\n"), err


def test_a_signed_memo_of_the_wrong_shape_is_noted(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MIGRATE_CACHE_KEY", "k" * 40)
    monkeypatch.chdir(tmp_path)
    cache = tmp_path / "cache"
    argv = ["scan", "proj", "--cache-dir", str(cache)]
    path = run_memo._memo_path(cache, run_memo._key_of(argv))
    doc = {"format": run_memo.FORMAT, "report": "r", "output": None, "code": 7, "deps": []}
    mac = run_memo.mac_of(b"k" * 40, b"run", path.name, doc)
    cache.mkdir()
    path.write_text(json.dumps({**doc, "mac": mac}))
    assert run_memo.replay(argv) is None
    assert "not a run memo; ignored" in capsys.readouterr().err
    path.write_text(
        json.dumps(
            {**doc, "code": 0, "mac": run_memo.mac_of(b"k" * 40, b"run", path.name, {**doc, "code": 0})}
        )
    )
    assert run_memo.replay(argv) == 0 and capsys.readouterr().out == "r"
