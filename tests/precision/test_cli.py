"""`migrate dump/compare/replay` through the real CLI: exit codes and output contracts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from migrate.precision.compare import compare_dumps
from migrate.precision.report import RENDERERS

ENTRY_KEYS = {
    "name",
    "call",
    "kind",
    "index",
    "dtype",
    "shape",
    "cosine",
    "max_abs",
    "max_rel",
    "rmse",
    "mismatch_ratio",
    "status",
}
PERTURB = {"PREC_PERTURB": "layers.2:0.05"}
HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """(ref, same, perturbed) dump dirs written by `migrate dump`."""
    base = tmp_path_factory.mktemp("cli")
    runs = {"ref": ({}, ["--inputs"]), "same": ({}, []), "bad": (PERTURB, ["--grads"])}
    for name, (env, extra) in runs.items():
        proc = _cli("dump", "--model", "prec_models:mlp_spec", "-o", base / name, *extra, env=env)
        assert proc.returncode == 0, proc.stderr
        assert "wrote" in proc.stdout
    return base / "ref", base / "same", base / "bad"


def _cli(*args, env=None):
    full = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(HERE)])}
    for key in ("PREC_PERTURB", "PREC_PERTURB_ONE", "PREC_NAN"):
        full.pop(key, None)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "migrate", *map(str, args)],
        cwd=REPO,
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _main(*args, env=None, monkeypatch=None):
    """The console-script entry point, in-process (no torch re-import): exit code."""
    from migrate.cli import main

    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    old = sys.argv
    sys.argv = ["migrate", *map(str, args)]
    try:
        main()
    except SystemExit as exc:
        return exc.code or 0
    finally:
        sys.argv = old
    return 0


def test_compare_exit_codes(dumps, tmp_path, capsys):
    ref, same, bad = dumps
    ok = _cli("compare", ref, same)
    assert ok.returncode == 0, ok.stderr
    lines = ok.stdout.splitlines()
    assert all(line.split()[0] in ("PASS", "WARN", "FAIL", "MISSING", "first") for line in lines)
    assert lines[-1].startswith("PASS gate")
    fail = _cli("compare", ref, bad, "--format", "json", "-o", tmp_path / "r.json")
    assert fail.returncode == 1 and fail.stdout.startswith("FAIL")
    doc = json.loads((tmp_path / "r.json").read_text())
    kinds = {r["kind"] for r in json.loads((bad / "manifest.json").read_text())["records"]}
    assert {"backward.grad_input", "backward.grad_output"} <= kinds  # dumped with --grads
    assert set(doc) >= {"entries", "first_divergence", "gate"}
    assert all(ENTRY_KEYS <= e.keys() for e in doc["entries"])
    assert doc["first_divergence"]["name"] == "layers.2"
    assert doc["gate"]["passed"] is False and doc["gate"]["violations"]
    assert _main("compare", ref, tmp_path / "missing") == 2
    bad_gate = tmp_path / "g.yaml"
    bad_gate.write_text("allowed_violations: -1\n")
    assert _main("compare", ref, same, "--gate", bad_gate) == 2
    assert "allowed_violations" in capsys.readouterr().err
    assert _main("compare", ref, same, "--format", "sarif") == 2
    assert _main("compare", ref) == 2  # missing argument: click's usage error
    assert _main("compare", ref, same, "--format", "junit", "-o", tmp_path / "j.xml") == 0
    assert ET.parse(tmp_path / "j.xml").getroot().get("failures") == "0"


def test_replay_cli_names_culprit(dumps, tmp_path, capsys, monkeypatch):
    ref, _, _ = dumps
    out = tmp_path / "replay.json"
    proc = _cli(
        "replay", "--model", "prec_models:mlp_spec", "--ref", ref, "--format", "json", "-o", out, env=PERTURB
    )
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["culprit"] == {"name": "layers.2", "call": 0}
    assert all(ENTRY_KEYS <= e.keys() for e in doc["entries"])
    monkeypatch.delenv("PREC_PERTURB", raising=False)
    capsys.readouterr()
    assert _main("replay", "--model", "prec_models:mlp_spec", "--ref", ref) == 0
    assert "culprit: none" in capsys.readouterr().out
    assert _main("replay", "--model", "nope_module:fn", "--ref", ref) == 2
    assert _main("replay", "--model", "prec_models:mlp_spec", "--ref", ref, "--device", "tpu") == 2


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_reports_render(dumps):
    ref, _, bad = dumps
    result = compare_dumps(ref, bad)
    html = RENDERERS["html"](result)
    parser = _Collect()
    parser.feed(html)
    tags = [t for t, _ in parser.tags]
    assert tags.count("svg") == 1 and "link" not in tags  # self-contained
    assert all("src" not in a for t, a in parser.tags if t in ("script", "img"))
    assert tags.count("circle") == sum(1 for e in result.entries if e["kind"] == "forward.output")
    assert any(a.get("class") == "divergence" for t, a in parser.tags if t == "line")
    assert {a.get("data-series") for t, a in parser.tags if t == "polyline"} == {
        "one_minus_cosine",
        "mismatch_ratio",
    }
    assert html.count('data-status="fail"') == result.counts()["fail"]
    suite = ET.fromstring(RENDERERS["junit"](result))
    cases = suite.findall("testcase")
    assert int(suite.get("tests")) == len(cases) == len(result.entries) + len(result.weights) + 1
    failed = [c for c in cases if c.find("failure") is not None]
    # every failing entry, the perturbed weight (a root cause) and the gate itself
    assert int(suite.get("failures")) == len(failed) == result.counts()["fail"] + 2
    assert [c.get("classname") for c in failed][-2:] == ["layers.2.weight", "gate"]
    assert suite.find("testcase[@name='gate']/failure") is not None
    md = RENDERERS["markdown"](result)
    assert md.startswith("### FAIL") and "`layers.2#0`" in md and "| verdict |" in md


def test_commands_import_without_torch():
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['safetensors'] = None\n"
        "import migrate.commands.precision, migrate.cli, migrate.precision\n"
        "print('ok')"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
