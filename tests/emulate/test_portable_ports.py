"""Portable ports of pytorch/examples-style training scripts reach the NPU.

The scripts pick their device the way pytorch/examples did before torch.accelerator: a
`use_cuda` / `use_mps` chain, a `--cuda` flag, `.cuda()` calls. After `migrate apply` (the
default target) each runs on this CPU host as before, and under `migrate run --emulate npu`
its model's parameters end on the `npu` device. The sample with its own device helper
(samples/own_device_helper) is ported through that helper and reaches the NPU too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fix.goldens import EXPECTED, migrate_cli

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]

TAIL = """
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 4).to(device), torch.randint(0, 2, (8,)).to(device)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(NAME, "PARAMS", next(model.parameters()).device.type)


if __name__ == "__main__":
    main()
"""
HEAD = """\
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


def main():
    parser = argparse.ArgumentParser()
"""
SCRIPTS = {
    # mnist before 2025: a use_cuda / use_mps chain
    "mnist": HEAD
    + textwrap.indent(
        textwrap.dedent("""\
        parser.add_argument("--no-cuda", action="store_true", default=False)
        parser.add_argument("--no-mps", action="store_true", default=False)
        args = parser.parse_args()
        use_cuda = not args.no_cuda and torch.cuda.is_available()
        use_mps = not args.no_mps and torch.backends.mps.is_available()
        torch.manual_seed(1)
        if use_cuda:
            device = torch.device("cuda")
        elif use_mps:
            device = torch.device("mps")
        else:
            device = torch.device("cpu")
        train_kwargs = {"batch_size": 8}
        if use_cuda:
            train_kwargs.update({"num_workers": 0, "pin_memory": True})
        """),
        "    ",
    )
    + TAIL,
    # word_language_model: a --cuda flag
    "word_lm": HEAD
    + textwrap.indent(
        textwrap.dedent("""\
        parser.add_argument("--cuda", action="store_true", help="use CUDA")
        args = parser.parse_args()
        if torch.cuda.is_available() and not args.cuda:
            print("WARNING: You have a CUDA device, so you should probably run with --cuda")
        device = torch.device("cuda" if args.cuda else "cpu")
        """),
        "    ",
    )
    + TAIL,
    # dcgan: .cuda() calls under a flag, a seeded GPU
    "dcgan": HEAD
    + textwrap.indent(
        textwrap.dedent("""\
        parser.add_argument("--cuda", action="store_true")
        args = parser.parse_args()
        torch.cuda.manual_seed_all(1)
        device = torch.device("cuda:0" if args.cuda else "cpu")
        net = Net()
        if args.cuda:
            net.cuda()
        print(NAME, "NET", next(net.parameters()).device.type)
        """),
        "    ",
    )
    + TAIL,
}
FLAGS = {"mnist": [], "word_lm": ["--cuda"], "dcgan": ["--cuda"]}
# Runs every script in one process (the emulation starts once): python drive.py [cpu|npu]
DRIVER = f"""\
import runpy, sys
FLAGS = {FLAGS!r}
where = sys.argv[1]
for name, flags in sorted(FLAGS.items()):
    if where == "cpu":
        flags = [f for f in flags if f != "--cuda"]  # as the original on a CPU host
    sys.argv = [name + ".py", *flags]
    runpy.run_path(name + ".py", init_globals={{"NAME": name}}, run_name="__main__")
"""


def _run(cmd: list[str], cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(cwd)]), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-1000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.fixture(scope="module")
def ported(tmp_path_factory) -> tuple[Path, str, str]:
    work = tmp_path_factory.mktemp("examples")
    for name, text in SCRIPTS.items():
        (work / f"{name}.py").write_text(text)
    r = migrate_cli(["apply", str(work), "--no-cache", "--no-progress"])
    assert r.exit_code == 0, r.output
    (work / "drive.py").write_text(DRIVER)
    cpu = _run([sys.executable, "drive.py", "cpu"], work)
    npu = _run(
        [sys.executable, "-m", "migrate", "run", "--emulate", "npu", "--", "python", "drive.py", "npu"], work
    )
    return work, cpu, npu


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_ported_script_trains_on_cpu_and_reaches_the_emulated_npu(ported, name):
    work, cpu, npu = ported
    text = (work / f"{name}.py").read_text()
    assert 'hasattr(torch, "npu")' not in text and "current_accelerator(True)" not in text
    assert f"{name} PARAMS cpu" in cpu, cpu
    assert f"{name} PARAMS npu" in npu, npu
    if name == "dcgan":
        assert "dcgan NET npu" in npu


def test_sample_with_its_own_helper_reaches_the_emulated_npu(tmp_path):
    work = tmp_path / "own_device_helper"
    shutil.copytree(EXPECTED / "portable" / "own_device_helper", work)
    assert not (work / "trainkit" / "_device.py").exists()  # no second helper
    for path in work.rglob("*.py"):
        if path.name != "accel.py":  # the project's helper keeps its CUDA arm
            assert "torch.cuda" not in path.read_text(), path
    assert "device cpu" in _run([sys.executable, "run.py"], work)
    out = _run([sys.executable, "-m", "migrate", "run", "--emulate", "npu", "--", "python", "run.py"], work)
    assert "device npu:0" in out, out
