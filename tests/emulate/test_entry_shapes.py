"""Ports never stop a program from starting the way it was started.

* pytorch/examples fast_neural_style: ``neural_style/`` holds an ``__init__.py`` but
  ``neural_style/neural_style.py`` is run by path and imports its siblings by bare name
  (``import utils``). The portable port must not import a helper through the package
  (``from neural_style._device import ...`` fails there): it is ported as a script.
* A torchrun script without a ``__main__`` block (its work runs at module level) is an entry
  point: ``--target transfer`` imports transfer_to_npu in it, so the emulated NPU run really
  runs on the NPU (before: no import, the "cuda" device reported as patched, 0 ops on npu).

Each is run after the port on this CPU host and under ``migrate run --emulate npu``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fix.goldens import migrate_cli

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]

NEURAL_STYLE = {
    "neural_style/__init__.py": "",
    "neural_style/utils.py": """\
        import torch


        def load_image(n):
            return torch.ones(n, 3)
        """,
    "neural_style/transformer_net.py": """\
        import torch


        class TransformerNet(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(3, 3)

            def forward(self, x):
                return self.fc(x)
        """,
    "neural_style/neural_style.py": """\
        import argparse
        import sys

        import torch

        import utils
        from transformer_net import TransformerNet


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--cuda", type=int, required=True)
            args = parser.parse_args()
            if args.cuda and not torch.cuda.is_available():
                print("ERROR: cuda is not available, try running on CPU")
                sys.exit(1)
            device = torch.device("cuda" if args.cuda else "cpu")
            model = TransformerNet().to(device)
            out = model(utils.load_image(2).to(device))
            print("STYLED", out.device.type)


        if __name__ == "__main__":
            main()
        """,
}

TORCHRUN = {
    "train.py": """\
        import os

        import torch
        import torch.distributed as dist

        dist.init_process_group("nccl")
        rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(rank)
        model = torch.nn.Linear(4, 2).cuda()
        x = torch.randn(3, 4).cuda()
        dist.all_reduce(x)
        print("TRAINED", next(model.parameters()).device.type, x.device.type)
        dist.destroy_process_group()
        """,
}


# the work is a call at module level of a function imported from a module beside it, and
# nothing prints: only the emulator's count shows whether the ops reached the NPU
TORCHRUN_CALLS_IMPORTED = {
    "steps.py": """\
        import torch


        def run_experiment(model, steps):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for _ in range(steps):
                loss = model(torch.randn(8, 4).cuda()).sum()
                loss.backward()
                opt.step()
                opt.zero_grad()
        """,
    "train.py": """\
        import torch

        from steps import run_experiment

        model = torch.nn.Linear(4, 2).cuda()
        run_experiment(model, steps=3)
        """,
}
_OPS = re.compile(r"emulated NPU run: (\d+) ops on npu")


def _lay(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _run(cmd: list[str], cwd: Path, stream: str = "stdout") -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout if stream == "stdout" else proc.stderr


def _emulated(cmd: list[str], cwd: Path, stream: str = "stdout") -> str:
    return _run([sys.executable, "-m", "migrate", "run", "--emulate", "npu", "--", *cmd], cwd, stream)


def test_a_package_module_run_by_path_still_starts_and_reaches_the_npu(tmp_path):
    _lay(tmp_path, NEURAL_STYLE)
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    text = (tmp_path / "neural_style" / "neural_style.py").read_text()
    assert "_device" not in text and not (tmp_path / "neural_style" / "_device.py").exists()
    assert "def is_npu_available() -> bool:" in text  # ported as the script it is
    script = ["python", "neural_style/neural_style.py"]
    assert "STYLED cpu" in _run([sys.executable, *script[1:], "--cuda", "0"], tmp_path)
    assert "STYLED npu" in _emulated([*script, "--cuda", "1"], tmp_path)


def test_a_torchrun_script_without_a_main_block_gets_transfer_to_npu(tmp_path):
    _lay(tmp_path, TORCHRUN)
    r = migrate_cli(["apply", "--target", "transfer", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    text = (tmp_path / "train.py").read_text()
    assert text.count("from torch_npu.contrib import transfer_to_npu") == 1
    launch = ["torchrun", "--standalone", "--nproc-per-node", "1", "train.py"]
    assert "TRAINED npu npu" in _emulated(launch, tmp_path)


def test_a_torchrun_script_calling_an_imported_function_reaches_the_npu(tmp_path):
    _lay(tmp_path, TORCHRUN_CALLS_IMPORTED)
    r = migrate_cli(["apply", "--target", "transfer", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "train.py").read_text().count("from torch_npu.contrib import transfer_to_npu") == 1
    assert "transfer_to_npu" not in (tmp_path / "steps.py").read_text()  # imported: a module
    report = _emulated(["python", "train.py"], tmp_path, stream="stderr")
    ops = _OPS.search(report)
    assert ops is not None, report[-2000:]
    assert int(ops.group(1)) > 0, report[-2000:]
