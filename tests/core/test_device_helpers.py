"""The device helpers a portable port adds (migrate/core/device_helpers/template.py), run for
real: on this CPU host and with a torch that predates torch.accelerator they give what the
original CUDA code gave; with an accelerator they name it; under the NPU emulation (torch_npu's
surface) every call reaches the NPU. The tool itself only reads the template as text."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from migrate.core import device_helpers

ROOT = Path(__file__).resolve().parents[2]
TORCH214 = next(
    (p for p in (Path("/work/venv214/bin/python"), Path("/work/main/.venv214/bin/python")) if p.exists()),
    Path("/work/venv214/bin/python"),
)


def test_every_kind_has_a_template_function_and_is_recognised_as_written():
    tree = ast.parse(device_helpers.module_text())
    kinds = {device_helpers.recognise(n) for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert kinds == set(device_helpers.NAMES)
    changed = ast.parse(device_helpers.definitions(["get_device_type"]).replace('"cpu"', '"xpu"'))
    assert device_helpers.recognise(changed.body[0]) is None  # edited by a person: theirs now


def test_definitions_bring_what_they_call_and_spell_torch_as_bound():
    code = device_helpers.definitions(["get_amp_device_type"], "th")
    tree = ast.parse(code)
    assert [n.name for n in tree.body] == ["get_device_type", "get_amp_device_type"]
    assert "th.cuda.is_available()" in code and "# there on an Ascend host" in code  # comments kept
    assert all(device_helpers.recognise(n, "th") for n in tree.body)


torch = pytest.importorskip("torch")


@pytest.fixture
def helpers():
    from migrate.core.device_helpers import template

    return template


def test_on_a_cpu_host_the_port_does_what_the_original_did(helpers):
    assert not torch.cuda.is_available()
    assert helpers.get_device_type() == "cpu"
    module = helpers.get_device_module()
    assert module is torch.cuda  # same no-ops, same zeros, same errors as before the port
    module.manual_seed_all(0)
    module.empty_cache()
    assert module.max_memory_allocated() == 0 and module.device_count() == 0
    assert helpers.get_amp_device_type() == "cuda"  # autocast stays disabled on CPU
    assert helpers.get_dist_backend() == "nccl"


def test_with_a_torch_older_than_the_accelerator_api(helpers, monkeypatch):
    monkeypatch.delattr(torch, "accelerator")
    assert helpers.get_device_type() == "cpu" and helpers.get_device_module() is torch.cuda
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert helpers.get_device_type() == "cuda" and helpers.get_amp_device_type() == "cuda"


def test_torch_npu_on_a_torch_older_than_the_accelerator_api_is_found(helpers, monkeypatch):
    """torch 2.1-2.5 with torch_npu: no torch.accelerator, but torch.npu is there and answers."""
    import types

    monkeypatch.delattr(torch, "accelerator")
    npu = types.ModuleType("torch.npu")
    npu.is_available = lambda: True  # type: ignore[attr-defined]
    monkeypatch.setattr(torch, "npu", npu, raising=False)
    assert helpers.is_npu_available()
    assert helpers.get_device_type() == "npu" and helpers.get_device_module() is npu
    assert helpers.get_amp_device_type() == "npu" and helpers.get_dist_backend() == "hccl"
    npu.is_available = lambda: False  # type: ignore[attr-defined]  # torch_npu without a device
    assert not helpers.is_npu_available() and helpers.get_device_type() == "cpu"


@pytest.mark.parametrize("accelerator,expected", [("cuda", "cuda"), ("xpu", "cpu"), ("mps", "cpu")])
def test_only_cuda_and_npu_are_named(helpers, monkeypatch, accelerator, expected):
    """Other accelerators keep what the CUDA code did there (the port adds the NPU only)."""
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(torch.accelerator, "current_accelerator", lambda *a, **k: torch.device(accelerator))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: accelerator == "cuda")
    assert helpers.get_device_type() == expected
    assert helpers.get_device_module() is torch.cuda
    assert not helpers.is_npu_available()


CHECK = textwrap.dedent("""\
    import json, sys
    import torch
    sys.path.insert(0, sys.argv[1])
    import template as h
    m = h.get_device_module()
    m.manual_seed_all(0)
    m.empty_cache()
    m.synchronize()
    x = torch.ones(2, device=h.get_device_type())
    print(json.dumps([h.get_device_type(), m is torch.npu, h.get_amp_device_type(),
                      h.get_dist_backend(), str(x.device), m.max_memory_allocated() >= 0]))
    """)


def _emulated(python: str, tmp_path, env_extra=None):
    script = tmp_path / "check.py"
    script.write_text(CHECK)
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    folder = ROOT / "migrate" / "core" / "device_helpers"
    proc = subprocess.run(
        [python, "-m", "migrate", "run", "--emulate", "npu", "--", "python", str(script), str(folder)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[0]


def test_under_the_npu_emulation_every_call_reaches_the_npu(tmp_path):
    assert _emulated(sys.executable, tmp_path) == '["npu", true, "npu", "hccl", "npu:0", true]'


@pytest.mark.skipif(not TORCH214.exists(), reason="no torch 2.14 venv on this machine")
def test_on_torch_2_14_cpu_and_emulated(tmp_path):
    """torch_npu 2.14 needs torch 2.14: the helpers behave the same there."""
    cpu = subprocess.run(
        [
            str(TORCH214),
            "-c",
            "import sys, torch; sys.path.insert(0, sys.argv[1]);"
            "import template as h; print(h.get_device_type(), "
            "h.get_device_module() is torch.cuda, h.get_dist_backend())",
            str(ROOT / "migrate" / "core" / "device_helpers"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cpu.stdout.split() == ["cpu", "True", "nccl"], cpu.stderr[-2000:]
    out = _emulated(str(TORCH214), tmp_path, {"MIGRATE_EMULATE_ANY_TORCH": "1"})
    assert out == '["npu", true, "npu", "hccl", "npu:0", true]'


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
@pytest.mark.parametrize("convention", ["google", "numpy", "pep257"])
def test_the_added_module_passes_docstring_and_import_order_lints(tmp_path, convention):
    """kornia lints with pydocstyle (google) and isort: the added kornia/_device.py had two
    multi-line summaries (D205, D209), and peft's, which builds on peft's infer_device, had
    `import torch` and the first-party import in one block (I001)."""
    (tmp_path / "pyproject.toml").write_text(
        "[tool.ruff.lint]\n"
        'select = ["D205", "D209", "D210", "D300", "D403", "E501", "I"]\n'
        f'[tool.ruff.lint.pydocstyle]\nconvention = "{convention}"\n'
        '[tool.ruff.lint.isort]\nknown-first-party = ["pkg"]\n'
    )
    (tmp_path / "m0.py").write_text(device_helpers.module_text())
    (tmp_path / "m1.py").write_text(device_helpers.module_text(("pkg.utils", "infer")))
    run = subprocess.run(
        ["ruff", "check", "--output-format", "concise", "m0.py", "m1.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout + run.stderr
