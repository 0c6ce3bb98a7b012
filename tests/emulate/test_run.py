"""`migrate run --emulate npu`: the library samples' ports against their originals (the
script samples: test_sample_ports.py), the attention fixers against SDPA (and a wrong port
caught by `migrate compare`), the report. Subprocess runs are slow, so each is started once
and shared by the tests that read it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from run_migrate import migrate

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def checks(tmp_path_factory):
    out = tmp_path_factory.mktemp("checks")
    proc = migrate(
        "run",
        "--emulate",
        "npu",
        "--report",
        str(out / "report.json"),
        "--",
        "python",
        str(HERE / "emulated_checks.py"),
        str(out),
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return (
        out,
        json.loads((out / "results.json").read_text()),
        json.loads((out / "report.json").read_text()),
        proc.stderr,
    )


def test_device_surface(checks):
    _, res, _, _ = checks
    assert res["device"] == ["npu:0", True, True, "npu", 8, True]
    assert res["device_ctx"] == [1, "npu:0"]  # tensors carry npu:0 (docs/emulate.md)
    assert res["stream"] == [True, 12.0] and res["memory"] is True
    assert "npu:0 and cpu" in res["mismatch"]
    assert res["not_emulated"].startswith(
        "not emulated: torch_npu.npu_ciou (called at tests/emulate/emulated_checks.py:"
    )
    assert res["autocast"] == ["float16", "float32", "float16", "bfloat16", "float32"]
    assert res["amp"] == "npu:0" and res["profiler_steps"] == 1 and res["load"] == "npu:0"


def test_every_wheel_name_and_every_written_name_resolves(checks):
    names = checks[1]["names"]
    assert names["surface"] > 1000 and names["written"] > 30
    assert names["missing"] == []
    # private names (torch_npu.npu.memory._snapshot, ...) are outside the public surface
    assert all("._" in n for n in names["unresolved"]), names["unresolved"]


@pytest.mark.parametrize("target", ["npu", "portable"])
def test_hf_sample_port_gives_the_original_loss(checks, target):
    hf = checks[1]["hf_sample"]
    assert not hf["original_flash"]  # no flash_attn on the CPU: SDPA
    if target == "npu":
        assert hf["npu_flash"]  # npu_fusion_attention
    assert hf[target] == pytest.approx(hf["original"], rel=1e-5)


@pytest.mark.parametrize("target", ["npu", "portable"])
def test_cuda_extension_sample_port_gives_the_original_loss(checks, target):
    ext = checks[1]["cuda_extension"]
    assert ext[target] == pytest.approx(ext["original"], rel=1e-6)


def test_attention_fixers_match_sdpa(checks):
    errs = checks[1]["fixers"]
    assert len(errs) == 7 and max(errs.values()) < 1e-5, errs


def test_compare_catches_a_wrong_port(checks):
    dumps = checks[0] / "dumps"
    assert migrate("compare", str(dumps / "ref"), str(dumps / "good")).returncode == 0
    bad = migrate("compare", str(dumps / "ref"), str(dumps / "bad"))
    assert bad.returncode == 1 and "first divergence: <root>#0 forward.output" in bad.stdout


def test_report_json_and_text(checks):
    _, _, report, stderr = checks
    assert report["exit_code"] == 0 and report["processes"] == 1
    assert report["ops"]["npu::npu_fusion_attention"] >= 1
    assert not any(op.startswith("aten::sym_") for op in report["ops"])
    syncs = [f for f in report["findings"] if f["kind"] == "host_sync"]
    assert any(
        f["op"] == "aten::_local_scalar_dense" and f["site"].startswith("tests/emulate/emulated_checks.py:")
        for f in syncs
    )
    assert "emulated NPU run:" in stderr.splitlines()[-1]


def test_report_names_what_it_judged_for_and_the_torch_that_ran(checks):
    """As `migrate ops --torch`: the torch_npu release and chips the verdicts hold for, the
    torch that ran and the one that torch_npu pins; a mismatch is a note."""
    import torch

    from migrate.ops.aten.judge import JUDGED_FOR

    _, _, report, stderr = checks
    assert report["target"] == "torch_npu-2.14.0" and report["judged_for"] == JUDGED_FOR
    ran = torch.__version__
    assert report["torch"] == {
        "used": ran.split("+")[0],
        "build": ran,
        "registry_requires": "torch==2.14.0.*",
        "matches": ran.startswith("2.14.0"),
    }
    mismatch = [n for n in report["notes"] if n.startswith("emulated with torch ")]
    assert len(mismatch) == (0 if report["torch"]["matches"] else 1)
    assert "judged for torch_npu-2.14.0 on every chip torch_npu supports" in stderr
    assert f"ran on torch {ran}" in stderr.splitlines()[-2]


def test_float64_and_fallback_are_reported(checks):
    report = checks[2]
    kinds = {(f["kind"], f["op"], f["site"].rsplit(":", 1)[0]) for f in report["findings"]}
    here = "tests/emulate/emulated_checks.py"
    assert ("dtype", "aten::ones", here) in kinds
    assert ("cpu_fallback", "aten::special_zeta", here) in kinds
    zeta = next(f for f in report["findings"] if f["op"] == "aten::special_zeta")
    assert zeta["dtype"] is None and "no NPU kernel in torch_npu 2.14.0" in zeta["reason"]
    assert report["summary"]["cpu_fallback"] >= 1 and report["summary"]["dtype"] >= 1


def test_usage_errors():
    bad = migrate("run", "--emulate", "gpu", "--", "python", "-c", "pass")
    assert bad.returncode == 2 and "--emulate must be one of npu" in bad.stderr
    missing = migrate("run", "--", "no-such-command-xyz")
    assert missing.returncode == 2 and "command not found" in missing.stderr


def test_pytest_plugin_and_module_forms(tmp_path):
    (tmp_path / "test_inner.py").write_text(
        "import torch, torch_npu\n\n"
        "def test_on_npu(npu_emulation):\n"
        "    x = torch.ones(2, device='npu')\n"
        "    assert x.is_npu and torch_npu.npu_swiglu(x.repeat(2)).device.type == 'npu'\n"
        "    assert npu_emulation.ops['npu::npu_swiglu'] == 1\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    plugin = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "migrate.emulate.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "test_inner.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert plugin.returncode == 0, plugin.stdout[-2000:]
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__main__.py").write_text(
        "import torch\nprint(torch.zeros(1, device='npu').device)\n", encoding="utf-8"
    )
    mod = migrate("run", "-f", "none", "--", "python", "-m", "pkg", cwd=tmp_path)
    assert mod.returncode == 0 and mod.stdout.strip() == "npu:0", mod.stderr[-2000:]
