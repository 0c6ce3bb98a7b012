"""DTensor, FSDP2 and tensor-parallel programs by torchrun (2 processes) under `migrate run
--emulate npu`: random ops on DTensors, an FSDP2 model initialised by ``reset_parameters()``
and trained (dtensor_checks.py), a mesh made without ``init_process_group`` and an MLP
trained tensor-parallel on it (tensor_parallel_checks.py); the models against the same
models trained whole on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from sgd_steps import sgd_steps  # noqa: E402  (the check programs' own loop)

RANKS = 2


def emulated_torchrun(script: Path, out: Path) -> tuple[subprocess.CompletedProcess, dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    report = out / "report.json"
    cmd = [sys.executable, "-m", "migrate", "run", "--emulate", "npu", "--report", str(report)]
    cmd += ["--", "torchrun", "--standalone", f"--nproc_per_node={RANKS}", str(script), str(out)]
    proc = subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc, json.loads(report.read_text())


def run_checks(tmp_path_factory, script: str) -> tuple[Path, list[dict], dict]:
    out = tmp_path_factory.mktemp(script.removesuffix(".py"))
    _, report = emulated_torchrun(HERE / script, out)
    ranks = [json.loads((out / f"results.{r}.json").read_text()) for r in range(RANKS)]
    return out, ranks, report


def trained_whole(model, start: dict, loss_fn, target: str, steps: int) -> list[float]:
    """The losses of ``model`` from ``start``'s parameters, trained by SGD on its batch."""
    model.load_state_dict(start["params"])
    losses = sgd_steps(model, loss_fn, start["x"], start[target], steps)
    assert losses[-1] < losses[0]
    return losses


@pytest.fixture(scope="module")
def dtensor_run(tmp_path_factory):
    return run_checks(tmp_path_factory, "dtensor_checks.py")


@pytest.fixture(scope="module")
def tp_run(tmp_path_factory):
    return run_checks(tmp_path_factory, "tensor_parallel_checks.py")


def test_the_npu_rng_state_is_torch_npus_and_round_trips(dtensor_run):
    for rank in dtensor_run[1]:
        assert rank["rng"] == {"bytes": 16, "dtype": "torch.uint8", "same": True}


def test_random_ops_on_dtensors_run_and_draw_one_tensor_across_ranks(dtensor_run):
    ranks = [r["dtensor"] for r in dtensor_run[1]]
    full = torch.tensor(ranks[0]["full"])
    assert full.shape == (8, 4) and full.std() > 0.3  # drawn, not left empty or constant
    assert ranks[1]["full"] == ranks[0]["full"]  # every rank sees the same DTensor
    for r, rank in enumerate(ranks):  # each shard is its rows of it
        assert torch.equal(torch.tensor(rank["local"]), full[4 * r : 4 * (r + 1)])
    assert not torch.equal(full[:4], full[4:])  # shards draw different numbers
    replicated = [torch.tensor(rank["replicated"]) for rank in ranks]
    assert torch.equal(replicated[0], replicated[1]) and replicated[0].unique().numel() == 6


def test_fsdp2_reset_parameters_then_training_gives_the_whole_models_losses(dtensor_run):
    out, ranks, report = dtensor_run
    assert report["exit_code"] == 0 and report["processes"] == RANKS + 1
    assert {"c10d::_allgather_base_", "c10d::_reduce_scatter_base_"} <= set(report["ops"])
    start = torch.load(out / "fsdp_start.pt")
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    ce = torch.nn.functional.cross_entropy
    want = trained_whole(model, start, ce, "y", len(ranks[0]["fsdp2"]))
    for rank in ranks:  # both ranks trained on the same batch: FSDP's mean is the batch's gradient
        assert rank["fsdp2"] == pytest.approx(want, rel=1e-5)


def test_a_mesh_made_without_init_process_group_runs_collectives(tp_run):
    _, ranks, report = tp_run
    assert report["exit_code"] == 0 and report["processes"] == RANKS + 1
    for r, rank in enumerate(ranks):
        assert rank["device"] == "npu:0"
        assert rank["all_reduce"] == [float(sum(range(1, RANKS + 1)))] * 3
        assert rank["scatter"] == [float(r)] * 2
    assert {"c10d::allreduce_", "c10d::scatter_"} <= set(report["ops"])


def test_tensor_parallel_training_on_that_mesh_gives_the_whole_models_losses(tp_run):
    out, ranks, _ = tp_run
    start = torch.load(out / "tp_start.pt")
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8))
    mse = torch.nn.functional.mse_loss
    want = trained_whole(model, start, mse, "target", len(ranks[0]["tp"]))
    for rank in ranks:
        assert rank["tp"] == pytest.approx(want, rel=1e-5)


def test_optimizers_of_sharded_parameters_are_told_apart(dtensor_run, tp_run):
    """FSDP2's and tensor parallelism's SGD step DTensors: counted apart from the optimizers
    torch_npu's fused ones could replace (they do not combine with sharding: no PERF105)."""
    for _, ranks, report in (dtensor_run, tp_run):
        workers = [p for p in report["perf"] if p.get("sharded_optimizers")]
        assert len(workers) == RANKS, report["perf"]
        for p in workers:
            assert p["sharded_optimizers"] == {"SGD": len(ranks[0].get("fsdp2") or ranks[0]["tp"])}
            assert "SGD" not in p["optimizers"]
