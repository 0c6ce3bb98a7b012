"""Every sample's `portable` and `npu` port (samples/_expected/<target>/<sample>, what
`migrate apply` writes) runs under `migrate run --emulate npu` with the original's losses.

The golden files are read as they are, so new goldens need nothing here; a new sample needs
its row in RUNS (how its user runs it), and the first test says so. Script samples run as
their users run them (`python SCRIPT ARGS`, `torchrun ...`) through drive.py, which records
every F.cross_entropy loss; the original runs on the CPU, taking its CUDA code path where it
has one (drive.py --cuda-on-cpu). Samples that are libraries (a model file, an extension's
Python package) are driven in-process by emulated_checks.py (test_run.py), both targets.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fix.goldens import EXPECTED, NAMES, SAMPLES
from run_migrate import migrate

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TARGETS = ("portable", "npu")
TRAIN = ["--epochs", "1", "--batch-size", "2048"]
DDP = ["--epochs", "1", "--width", "32", "--batch-size", "1024"]
# sample -> how its user runs the port, how the original runs on the CPU, the tolerance
# (rel; AMP: the port's NPU path computes in float16 where the original's CPU path cannot).
RUNS = {
    "train_amp": {
        "port": ["train.py", "--no-amp", *TRAIN],
        "orig": ["train.py", "--device", "cpu", *TRAIN],
        "rel": 1e-5,
    },
    "multi_backend": {"port": ["train_step.py"], "orig": ["train_step.py"], "rel": 2e-3},
    "own_device_helper": {"port": ["run.py"], "orig": ["run.py"], "rel": 2e-3},
    "ddp_launcher": {"port": ["train_ddp.py", "--backend", "hccl", *DDP], "torchrun": 2, "rel": 1e-5},
}
LIBRARIES = {"hf_flash_attention", "cuda_extension"}  # emulated_checks.py: hf_sample, ...


def test_every_sample_has_a_run():
    assert set(NAMES) - LIBRARIES <= set(RUNS), "add the new sample's run to RUNS"


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    """The original sample's losses on the CPU, run when a test first asks for them."""

    @functools.cache
    def of(name: str) -> list[float]:
        work = tmp_path_factory.mktemp(name)
        shutil.copytree(SAMPLES / name, work, dirs_exist_ok=True)
        proc = subprocess.run(
            [
                sys.executable,
                str(HERE / "drive.py"),
                str(work / "losses.json"),
                "--cuda-on-cpu",
                *RUNS[name]["orig"],
            ],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads((work / "losses.json").read_text())

    return of


def ddp_reference(steps_per_rank: int) -> list[list[float]]:
    """The original ddp_launcher training, by its own functions, on one CPU process: per
    step, each rank's batch from DistributedSampler, gradients averaged over the two ranks
    (what DDP does), SGD with momentum; per-rank losses."""
    import importlib.util

    import torch
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler

    spec = importlib.util.spec_from_file_location("ddp_orig", SAMPLES / "ddp_launcher/train_ddp.py")
    orig = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(orig)
    torch.manual_seed(0)
    model = orig.build_model(32)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = orig.synthetic_data()
    loaders = []
    for rank in (0, 1):
        sampler = DistributedSampler(data, num_replicas=2, rank=rank, shuffle=True)
        sampler.set_epoch(0)
        loaders.append(iter(DataLoader(data, batch_size=1024, sampler=sampler)))
    losses: list[list[float]] = [[], []]
    for _ in range(steps_per_rank):
        opt.zero_grad()
        total = 0
        for rank, loader in enumerate(loaders):
            x, y = next(loader)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            losses[rank].append(float(loss.detach()))
            total = total + loss / 2
        total.backward()
        opt.step()
    return losses


PINNED = ("multi_backend", "portable")  # also run by .ci/run's torch 2.14 job (the smallest)
CASES = [
    pytest.param(name, target, marks=[pytest.mark.pinned_torch] if (name, target) == PINNED else [])
    for name in NAMES
    if name in RUNS
    for target in TARGETS
]


@pytest.mark.parametrize(("name", "target"), CASES)
def test_sample_port_gives_the_originals_losses_on_the_emulated_npu(tmp_path, originals, name, target):
    run = RUNS[name]
    work = tmp_path / name
    shutil.copytree(EXPECTED / target / name, work)
    out, report = tmp_path / "losses.json", tmp_path / "report.json"
    launcher = (
        ["python"]
        if "torchrun" not in run
        else ["torchrun", "--standalone", f"--nproc_per_node={run['torchrun']}"]
    )
    proc = migrate(
        "run",
        "--emulate",
        "npu",
        "--report",
        str(report),
        "--",
        *launcher,
        str(HERE / "drive.py"),
        str(out),
        *run["port"],
        cwd=work,
    )
    assert proc.returncode == 0, proc.stdout[-1000:] + proc.stderr[-3000:]
    report = json.loads(report.read_text())
    assert report["exit_code"] == 0 and report["summary"]["npu_ops"] > 0
    if "torchrun" in run:
        assert report["processes"] == run["torchrun"] + 1  # torchrun and its workers
        assert {"c10d::allreduce_", "c10d::broadcast_"} <= set(report["ops"])
        assert "2 x Ascend (emulated on CPU)" in proc.stdout
        got = [json.loads(Path(f"{out}.{rank}").read_text()) for rank in (0, 1)]
        want = ddp_reference(len(got[0]))
    else:
        got, want = [json.loads(out.read_text())], [originals(name)]
    assert len(got) == len(want) and all(got)
    for rank_got, rank_want in zip(got, want):
        assert rank_got == pytest.approx(rank_want, rel=run["rel"])
