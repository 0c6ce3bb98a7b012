"""No destructive arguments (issue 18, item 6): an empty path is a usage error, and an output
that is an input (or a file an input depends on) is refused before any work."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hostile import CUDA, migrate


def _tree(tmp_path: Path) -> Path:
    d = tmp_path / "D"
    d.mkdir()
    (d / "a.py").write_text(CUDA)
    (d / "pyproject.toml").write_text('[tool.migrate]\nextend-exclude = ["build/*"]\n')
    return d


def _snapshot(folder: Path) -> dict:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_scan_output_is_never_an_input(tmp_path):  # repro: scan a.py -o a.py
    d = _tree(tmp_path)
    before = _snapshot(d)
    for args in (
        (d / "a.py", "-o", d / "a.py"),
        (d, "-o", d / "a.py"),
        (d, "--config", d / "pyproject.toml", "-o", d / "pyproject.toml"),
        (d, "-o", d),
        (d, "-o", ""),
    ):
        r = migrate("scan", *args, "--no-cache")
        assert r.returncode == 2, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert _snapshot(d) == before


def test_scan_output_may_be_a_new_file_in_the_tree(tmp_path):
    d = _tree(tmp_path)
    r = migrate("scan", d, "--no-cache", "--format", "json", "-o", d / "report.json")
    assert r.returncode == 1 and (d / "report.json").read_text().startswith("{")
    r = migrate("scan", d, "--no-cache", "--format", "json", "-o", d / "report.json")
    assert r.returncode == 1  # a report written before is no input of the scan


def test_output_through_a_planted_symlink_replaces_the_link(tmp_path):
    d = _tree(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    os.symlink(victim, d / "report.txt")
    r = migrate("scan", d / "a.py", "--no-cache", "-o", d / "report.txt")
    assert r.returncode == 1, r.stderr
    assert victim.read_text() == "keep me\n"
    assert not (d / "report.txt").is_symlink() and "MIG" in (d / "report.txt").read_text()


def test_output_to_a_device_or_fifo(tmp_path):
    d = _tree(tmp_path)
    assert migrate("scan", d, "--no-cache", "-o", os.devnull).returncode == 1
    assert Path(os.devnull).is_char_device()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = migrate("scan", d, "--no-cache", "-o", fifo, timeout=900)  # nobody reads it
    assert r.returncode == 2 and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("scan", ""),
        ("apply", ""),
        ("scan", "D", "--cache-dir", ""),
        ("scan", "D", "--config", ""),
        ("scan", "D", "-o", ""),
        ("ops", ""),
        ("decompose", "", "-o", "x.onnx"),
        ("decompose", "m.onnx", "-o", ""),
        ("rules", "-o", ""),
        ("compare", "", "D"),
        ("run", "--report", "", "--", "python", "-c", "pass"),
    ],
)
def test_empty_paths_are_usage_errors(tmp_path, args):  # repro: migrate apply ""
    _tree(tmp_path)
    before = _snapshot(tmp_path)
    r = migrate(*args, cwd=tmp_path, timeout=900)
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert _snapshot(tmp_path) == before


def test_run_report_is_not_the_script(tmp_path):  # repro: run --report t.py -- python t.py
    t = tmp_path / "t.py"
    t.write_text("print('hello')\n")
    r = migrate("run", "--report", t, "--", "python", t, cwd=tmp_path, timeout=900)
    assert r.returncode == 2 and "hello" not in r.stdout
    assert t.read_text() == "print('hello')\n"


def test_rules_output_is_not_a_rule_file(tmp_path, repo_root):
    rules = tmp_path / "rules"
    import shutil

    shutil.copytree(repo_root / "rules", rules)
    before = _snapshot(rules)
    victim = next(p for p in sorted(rules.glob("*.yaml")))
    r = migrate("rules", "--rules-dir", rules, "-o", victim)
    assert r.returncode == 2, r.stderr
    assert _snapshot(rules) == before


def test_doctor_never_overwrites_what_it_reads(tmp_path, capsys):
    from hostile import main

    log = tmp_path / "train.log"
    log.write_text("EZ9999 failed\n")
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "requirements.txt").write_text("torch==2.1.0\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for args in (
        ("--log", log, "-o", log),
        ("--no-import", "--project", tmp_path / "proj", "-o", tmp_path / "proj" / "requirements.txt"),
        ("--no-import", "--project", fifo),
        ("--no-import", "--timeout", "nan"),
        ("--no-import", "--timeout", "inf"),
    ):
        code, _, err = main(capsys, "doctor", *args)
        assert code == 2 and len(err.strip().splitlines()) == 1, (args, err)
    assert log.read_text() == "EZ9999 failed\n"
    assert (tmp_path / "proj" / "requirements.txt").read_text() == "torch==2.1.0\n"


@pytest.mark.parametrize("form", ["file", "venv"])
def test_doctor_never_overwrites_the_interpreter_it_probes(tmp_path, capsys, form):
    # -o over --python replaced the interpreter with the report
    from hostile import main

    py = tmp_path / "venv" / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.write_text("#!/bin/sh\nexit 1\n")
    py.chmod(0o755)
    given = py if form == "file" else tmp_path / "venv"
    code, _, err = main(capsys, "doctor", "--python", given, "--timeout", "5", "-o", py)
    assert code == 2 and "--python" not in err and len(err.strip().splitlines()) == 1, err
    assert py.read_text() == "#!/bin/sh\nexit 1\n"


def test_rule_files_of_a_rules_dir_are_bounded(tmp_path, capsys):
    from hostile import main

    os.mkfifo(tmp_path / "x.yaml")
    code, _, err = main(capsys, "rules", "--rules-dir", tmp_path)
    assert code == 2 and "not a regular file" in err
