"""The oldest torch a project allows (its pyproject, setup files, requirements) decides
the spelling of what a port writes: `torch.amp.GradScaler(device)` exists from torch 2.3,
so a project that still allows torch 1.11 keeps a device-module form
(`<device module>.amp.GradScaler()`, which every torch_npu has). Each case is ported by
`migrate apply` in its folder and the ported script is run on this CPU host."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fix.goldens import migrate_cli

from migrate.scan.project import declared_min_torch

ROOT = Path(__file__).resolve().parents[2]
TRAIN = """\
    import torch

    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    loss = model(torch.ones(3, 4)).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    print("STEPPED", type(scaler).__module__)
    """
PYPROJECT = '[project]\nname = "p"\nrequires-python = ">=3.8"\ndependencies = ["torch>={}", "numpy"]\n'


def port(root: Path, files: dict[str, str], rel: str = "train.py") -> str:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    result = migrate_cli(["apply", str(root), "--no-cache"])
    assert result.exit_code == 0, result.output
    return (root / rel).read_text()


def squashed(text: str) -> str:
    """``text`` without whitespace: the port may wrap a lengthened line."""
    return re.sub(r"\s+", "", text)


def run(root: Path, rel: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, rel], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.parametrize(
    "deps",
    [
        {"pyproject.toml": PYPROJECT.format("1.11")},
        {"requirements.txt": "numpy\ntorch>=1.11\n"},
        # the lowest floor among the folder's dependency files: the code must run on 1.11
        {"pyproject.toml": PYPROJECT.format("2.3"), "requirements/base.txt": "torch>=1.11.0\n"},
    ],
    ids=["pyproject", "requirements", "lowest-wins"],
)
def test_a_project_allowing_torch_1_11_keeps_the_device_module_form(tmp_path, deps):
    out = squashed(port(tmp_path, {**deps, "train.py": TRAIN}))
    assert "torch.amp.GradScaler" not in out
    assert ".amp.GradScaler(enabled=False)" in out and "scaler=torch.cuda.amp.GradScaler(" not in out
    assert "STEPPED" in run(tmp_path, "train.py")


def test_a_package_allowing_torch_1_11_uses_its_device_module_helper(tmp_path):
    files = {"requirements.txt": "torch>=1.11\n", "pkg/__init__.py": "", "pkg/train.py": TRAIN}
    out = squashed(port(tmp_path, files, "pkg/train.py"))
    assert "get_device_module().amp.GradScaler(enabled=False)" in out
    assert "torch.amp.GradScaler" not in (tmp_path / "pkg" / "_device.py").read_text() + out
    assert "STEPPED" in run(tmp_path, "pkg/train.py")


def test_a_project_requiring_torch_2_3_gets_torch_amp_grad_scaler(tmp_path):
    out = squashed(port(tmp_path, {"pyproject.toml": PYPROJECT.format("2.3"), "train.py": TRAIN}))
    assert "scaler=torch.amp.GradScaler(" in out and ",enabled=False)" in out
    assert "STEPPED torch.amp.grad_scaler" in run(tmp_path, "train.py")


def test_the_declared_floor_beats_what_the_file_shows(tmp_path):
    """The file names torch.amp.GradScaler (2.3) in a guarded branch, the project allows
    1.11: the fallback keeps a spelling torch 1.11 has."""
    code = TRAIN.replace(
        "scaler = torch.cuda.amp.GradScaler(enabled=False)",
        'scaler = (torch.amp.GradScaler("cpu", enabled=False) if hasattr(torch.amp, "GradScaler")\n'
        "              else torch.cuda.amp.GradScaler(enabled=False))",
    )
    out = squashed(port(tmp_path, {"pyproject.toml": PYPROJECT.format("1.11"), "train.py": code}))
    assert out.count("torch.amp.GradScaler") == 1  # the project's own, untouched
    assert "elsetorch.cuda.amp.GradScaler" not in out and ".amp.GradScaler(enabled=False))" in out
    assert "STEPPED" in run(tmp_path, "train.py")


def test_declared_min_torch_reads_requirement_variants(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "requirements-gpu.txt").write_text("torch==1.13.1\n")
    (tmp_path / "setup.cfg").write_text("[options]\ninstall_requires =\n    torch>=2.1\n")
    assert declared_min_torch(tmp_path / "sub", tmp_path) == (1, 13)
    (tmp_path / "sub" / "requirements.txt").write_text("torch>=2.4\ntorchvision>=0.5\n")
    assert declared_min_torch(tmp_path / "sub", tmp_path) == (2, 4)  # the nearest folder
    assert declared_min_torch(tmp_path / "none", tmp_path / "none") is None
