"""A real training script from outside the project: pytorch_warmup 0.2.0's EMNIST example
(pinned sdist, downloaded once into .cache/sdists), ported with `migrate apply` and run on
the emulated NPU; its losses must be those of the original run on the CPU (--no-gpu)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SDIST = "pytorch_warmup-0.2.0"
CACHE = ROOT / ".cache" / "sdists"


def sdist() -> Path:
    found = CACHE / f"{SDIST}.tar.gz"
    if not found.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "pytorch-warmup==0.2.0",
                "-d",
                str(CACHE),
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if proc.returncode != 0 or not found.is_file():
            pytest.skip(f"cannot download {SDIST} (no package index?)")
    return found


def _env(*paths: Path) -> dict:
    return {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(str(p) for p in (ROOT, *paths)),
    }


def _losses(folder: Path) -> list[float]:
    rows = (folder / "output_linear" / "history.csv").read_text().splitlines()[1:]
    return [float(r.split(",")[2]) for r in rows]


def test_external_example_ported_and_emulated(tmp_path):
    with tarfile.open(sdist()) as tar:
        tar.extractall(tmp_path, filter="data")
    src = tmp_path / SDIST
    orig, port = tmp_path / "orig", tmp_path / "port"
    shutil.copytree(src / "examples" / "emnist", orig)
    shutil.copytree(src / "examples" / "emnist", port)
    env = _env(src, HERE / "stubs")
    apply = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrate",
            "apply",
            "--target",
            "npu",
            "--unsafe-fixes",
            str(port / "main.py"),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert apply.returncode == 0, apply.stderr
    text = (port / "main.py").read_text()
    assert "torch.npu.is_available()" in text and "torch.device('npu')" in text

    args = ["main.py", "--epochs", "1", "--batch-size", "32", "--log-interval", "1"]
    run = subprocess.run(
        [sys.executable, "-m", "migrate", "run", "--emulate", "npu", "--", "python", *args],
        cwd=port,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Device: npu" in run.stdout
    cpu = subprocess.run(
        [sys.executable, *args, "--no-gpu"], cwd=orig, env=env, capture_output=True, text=True, timeout=300
    )
    assert cpu.returncode == 0, cpu.stderr[-3000:]
    got, want = _losses(port), _losses(orig)
    assert len(got) == len(want) == 4 and got == pytest.approx(want, rel=1e-5)
