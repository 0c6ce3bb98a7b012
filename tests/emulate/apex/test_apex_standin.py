"""The apex stand-in is there only inside an emulated run and only when no real apex can be
imported: an apex on PYTHONPATH or beside the script is the one imported, and a submodule it
lacks stays missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[3]
PROBE = """
import json, sys
try:
    import apex
except ModuleNotFoundError as exc:
    print(json.dumps({"apex": None, "error": str(exc)})); sys.exit(0)
got = {"apex": getattr(apex, "__file__", None), "emulated": bool(getattr(apex, "__emulated__", False)),
       "real": getattr(apex, "REAL", False)}
try:
    import apex.amp
    got["amp"] = "initialize" in dir(apex.amp)
except ModuleNotFoundError as exc:
    got["amp"] = str(exc)
print(json.dumps(got))
"""


def _fake_apex(folder: Path) -> Path:
    (folder / "apex").mkdir(parents=True)
    (folder / "apex" / "__init__.py").write_text("REAL = True\n")
    return folder


def _run(tmp: Path, emulated: bool, *paths: Path) -> tuple[dict, str]:
    script = tmp / "probe.py"
    script.write_text(PROBE)
    path = os.pathsep.join(str(p) for p in (ROOT, *paths))
    env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, str(script)]
    if emulated:
        report = tmp / "report.json"
        run = ["-m", "migrate", "run", "--emulate", "npu", "--report", str(report), "--"]
        cmd = [sys.executable, *run, *cmd]
    proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    notes = json.loads((tmp / "report.json").read_text())["notes"] if emulated else []
    return json.loads(proc.stdout.strip().splitlines()[-1]), "\n".join(notes)


def test_without_apex_the_emulated_run_gets_the_stand_in(tmp_path):
    got, notes = _run(tmp_path, True)
    assert got["emulated"] is True and got["amp"] is True and got["real"] is False
    assert "apex: not installed; the emulation's stand-in ran" in notes


def test_outside_an_emulated_run_there_is_no_apex(tmp_path):
    got, _ = _run(tmp_path, False)
    assert got["apex"] is None and "apex" in got["error"]


def test_a_real_apex_on_the_path_is_never_shadowed(tmp_path):
    site = _fake_apex(tmp_path / "site")
    run = tmp_path / "run"
    run.mkdir()
    got, notes = _run(run, True, site)
    assert got["real"] is True and got["emulated"] is False
    assert got["apex"] == str(site / "apex" / "__init__.py")
    assert "apex.amp" in got["amp"]  # what the real one lacks is not filled in
    assert "stand-in" not in notes


def test_an_apex_folder_beside_the_script_wins(tmp_path):
    _fake_apex(tmp_path)
    got, _ = _run(tmp_path, True)
    assert got["real"] is True and got["emulated"] is False
