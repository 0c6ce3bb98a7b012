"""Three Ascend ModelZoo-PyTorch training scripts, unported, under `migrate run --emulate npu`:
apex amp (O2 static, O1 static) with NpuFusedSGD or torch SGD, int32 targets, a tiny fake
ImageFolder (12 train, 6 val images). The scripts are read from a local mirror of the
repository at test time (never copied into this project); without the mirror, torchvision or
Pillow the test is skipped. docs/emulate.md ("Real scripts run emulated") records the runs."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
Image = pytest.importorskip("PIL.Image")

pytestmark = pytest.mark.pinned_torch  # torchvision installs beside torch 2.14 only (.ci/run)

ROOT = Path(__file__).resolve().parents[3]
MIRROR = Path(os.environ.get("MODELZOO_MIRROR", "/work/.mirror/Ascend+ModelZoo-PyTorch/repo"))
CV = "PyTorch/contrib/cv/classification"
COMMON = ["--epochs", "1", "-b", "4", "-j", "0", "-p", "1", "--seed", "0"]
SCRIPTS = {
    "squeezenet1_1": (f"{CV}/SqueezeNet1_1", ["--data", "{data}", "--amp", *COMMON], "O2", 3),
    "resnet18": (
        f"{CV}/ResNet18_ID1593_for_PyTorch",
        ["{data}", "-a", "resnet18", "--amp", "--opt-level", "O2", "--loss-scale", "128"]
        + ["--device_list", "0", *COMMON],
        "O2",
        3,
    ),
    "alexnet": (
        f"{CV}/AlexNet_ID2663_for_PyTorch",
        ["{data}", "--amp", "--opt-level", "O1", "--loss-scale", "128", "--device_list", "0", "--gpu", "0"]
        + COMMON,
        "O1",
        3,
    ),
}


def _extract(folder: str, dest: Path) -> Path:
    if not (MIRROR / "HEAD").exists() and not (MIRROR / ".git").exists():
        pytest.skip(f"no ModelZoo-PyTorch mirror at {MIRROR} (MODELZOO_MIRROR)")
    cmd = ["git", "-C", str(MIRROR), "archive", "HEAD", folder]
    proc = subprocess.run(cmd, capture_output=True, timeout=120)
    if proc.returncode != 0:
        pytest.skip(f"{folder} not in the mirror: {proc.stderr.decode()[-300:]}")
    with tarfile.open(fileobj=BytesIO(proc.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest / folder


def _images(root: Path) -> Path:
    import random

    rng = random.Random(0)
    for split, count in (("train", 6), ("val", 3)):
        for label in ("n01440764", "n01443537"):
            folder = root / split / label
            folder.mkdir(parents=True)
            for i in range(count):
                img = Image.new("RGB", (64, 64))
                img.putdata([tuple(rng.randrange(256) for _ in range(3)) for _ in range(64 * 64)])
                img.save(folder / f"img_{i}.JPEG")
    return root


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_modelzoo_apex_script_trains_unported(name, tmp_path):
    folder, args, level, steps = SCRIPTS[name]
    work = _extract(folder, tmp_path / "zoo")
    data = _images(tmp_path / "data")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "2"}
    report = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "migrate", "run", "--emulate", "npu", "--report", str(report), "--"]
    cmd += ["python", "main.py", *(a.format(data=data) for a in args)]
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert f"Selected optimization level {level}" in proc.stdout
    losses = [float(v) for v in re.findall(r"Epoch: \[0\]\[\d+/\d+\].*?Loss ([0-9.e+-]+)", proc.stdout)]
    assert len(losses) == steps and all(math.isfinite(v) for v in losses), proc.stdout[-2000:]
    assert re.search(r"Test: \[0/\d+\].*Loss [0-9.e+-]+", proc.stdout)  # validation ran too
    got = json.loads(report.read_text())
    assert got["exit_code"] == 0 and got["ops"].get("aten::convolution", 0) > 0
    assert any("the emulation's stand-in ran" in n for n in got["notes"])
