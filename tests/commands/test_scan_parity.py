"""ruff parity of `migrate scan`: ignoring a rule drops exactly its findings, unknown codes
fail everywhere, per-file-ignores / extend-select, literal help, statistics, fail-on perf."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from migrate.cli import app
from migrate.core.errors import UsageError
from migrate.scan.session import ScanRequest, run_session

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"


def _run(*args: str):
    return CliRunner().invoke(app, [*args, "--no-progress"])


def _keys(request: ScanRequest) -> set[tuple]:
    result = run_session(request).result
    return {(f.rule, f.path, f.line, f.column) for f in result.findings}


@pytest.fixture(scope="module")
def baseline() -> set[tuple]:  # with the opt-in perf advice, so that it can be ignored too
    return _keys(ScanRequest([SAMPLES], extend_select=["MIG9"], no_cache=True, jobs=1))


def test_samples_have_findings_of_many_rules(baseline):
    assert len({k[0] for k in baseline}) >= 15


@pytest.mark.parametrize("ignored", ["MIG2", "MIG70", "MIG5", "MIG9", "torch-cuda-api"])
def test_ignore_reports_a_strict_subset_without_the_rule(baseline, ignored):
    got = _keys(ScanRequest([SAMPLES], ignore=[ignored], extend_select=["MIG9"], no_cache=True, jobs=1))
    gone = baseline - got
    assert got < baseline  # a strict subset: nothing new appears, something goes
    assert gone and all(
        k[0].startswith(ignored) or (ignored == "torch-cuda-api" and k[0] == "MIG101") for k in gone
    )
    assert not any(k[0].startswith(ignored) for k in got)


def test_every_rule_with_findings_can_be_ignored_alone(baseline):
    for code in sorted({k[0] for k in baseline}):
        got = _keys(ScanRequest([SAMPLES], ignore=[code], extend_select=["MIG9"], no_cache=True, jobs=1))
        assert got == {k for k in baseline if k[0] != code}, code


@pytest.mark.parametrize("flag", ["--ignore", "--select", "--extend-select"])
def test_unknown_codes_fail_alike(flag, monkeypatch, capsys):
    from migrate.cli import main

    monkeypatch.setattr(
        "sys.argv", ["migrate", "scan", str(SAMPLES), flag, "MIG999", "--no-cache", "--no-progress"]
    )
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 2
    assert capsys.readouterr().err == (
        f"migrate: error: {flag} MIG999: no rule has this code or name (see `migrate rules`)\n"
    )


def test_unknown_codes_in_config_fail(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.migrate]\nignore = ["MIG999"]\n')
    (tmp_path / "a.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    with pytest.raises(UsageError, match="ignore MIG999: no rule"):
        run_session(ScanRequest([tmp_path], no_cache=True))


def test_per_file_ignores_from_cli_and_config(tmp_path):
    (tmp_path / "tests").mkdir()
    code = 'import torch\nx = torch.zeros(1, device="cuda")\ntorch.cuda.synchronize()\n'
    (tmp_path / "train.py").write_text(code)
    (tmp_path / "tests" / "test_x.py").write_text(code)
    found = _keys(ScanRequest([tmp_path], per_file_ignores=["tests/*:MIG2"], no_cache=True))
    assert ("MIG201", "tests/test_x.py", 2, 27) not in found
    assert ("MIG101", "tests/test_x.py", 3, 1) in found
    assert ("MIG201", "train.py", 2, 27) in found
    (tmp_path / "pyproject.toml").write_text(
        '[tool.migrate]\n[tool.migrate.per-file-ignores]\n"tests/*" = ["MIG101"]\n'
    )
    found = _keys(ScanRequest([tmp_path], no_cache=True))
    assert {k[0] for k in found if k[1] == "tests/test_x.py"} == {"MIG201"}


def test_extend_select_adds_to_select(tmp_path):
    (tmp_path / "a.py").write_text(
        'import torch\nx = torch.zeros(1, device="cuda")\ntorch.cuda.synchronize()\n'
    )
    only = _keys(ScanRequest([tmp_path], select=["MIG201"], no_cache=True))
    both = _keys(ScanRequest([tmp_path], select=["MIG201"], extend_select=["MIG101"], no_cache=True))
    assert {k[0] for k in only} == {"MIG201"} and {k[0] for k in both} == {"MIG101", "MIG201"}


def test_help_is_rendered_literally():
    out = _run("scan", "--help")
    assert "pyproject.toml to read [tool.migrate] from." in " ".join(out.output.split())


def test_statistics_with_no_findings_says_so(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    out = _run("scan", str(tmp_path), "--statistics", "--no-cache")
    assert out.exit_code == 0 and out.output.strip() == "No findings (1 file scanned)."


def test_perf_advice_is_opt_in_and_fails_a_run_only_when_asked(tmp_path):
    (tmp_path / "opt.py").write_text("import torch\nopt = torch.optim.AdamW(params, lr=1e-3)\n")
    assert _run("scan", str(tmp_path), "--no-cache").output.startswith("All checks passed!")
    (tmp_path / "dev.py").write_text('import torch\nx = torch.zeros(1, device="cuda")\n')
    plain = _run("scan", str(tmp_path), "--no-cache", "--exit-zero")
    assert "opt-in: add `--extend-select MIG9`" in plain.output and "MIG901" not in plain.output
    (tmp_path / "dev.py").unlink()
    out = _run("scan", str(tmp_path), "--no-cache", "--format", "json", "--extend-select", "MIG9")
    data = json.loads(out.output)
    assert [f["category"] for f in data["findings"]] == ["perf"]
    assert out.exit_code == 0
    assert data["summary"]["effort"]["minutes"] == 0
    assert data["summary"]["effort"]["optional"]["minutes"] == 30
    assert (
        _run("scan", str(tmp_path), "--no-cache", "--extend-select", "MIG9", "--fail-on", "perf").exit_code
        == 1
    )


def test_perf_fixes_only_when_selected(tmp_path):
    (tmp_path / "opt.py").write_text("import torch\nopt = torch.optim.AdamW(params, lr=1e-3)\n")
    (tmp_path / "pyproject.toml").write_text('[tool.migrate]\nextend-select = ["MIG9"]\n')
    assert _run("apply", "--target", "npu", str(tmp_path), "--unsafe-fixes", "--no-cache").exit_code == 0
    assert "AdamW" in (tmp_path / "opt.py").read_text()  # advice, not a fix, unless --select
    assert (
        _run(
            "apply", "--target", "npu", str(tmp_path), "--unsafe-fixes", "--select", "MIG901", "--no-cache"
        ).exit_code
        == 0
    )
    assert (tmp_path / "opt.py").read_text() == (
        "import torch\nimport torch_npu\nopt = torch_npu.optim.NpuFusedAdamW(params, lr=1e-3)\n"
    )
