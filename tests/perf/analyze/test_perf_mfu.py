"""MFU: model FLOPs counted forward and backward (a tiny GPT-like model on the CPU, against a
count by hand), over the step time the profile measured, against the chip table's peak."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.core.errors import UsageError
from migrate.perf.analyze.mfu import check_chip, check_dtype, mfu_for
from migrate.perf.run import PerfRequest, analyze, read_side

B, T, D, V, LAYERS = 2, 16, 32, 64, 2

MODEL = f"""
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        att = torch.softmax(q @ k.transpose(1, 2) / 8.0, dim=-1)
        x = x + self.out(att @ v)
        return x + self.down(torch.relu(self.up(x)))

class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding({V}, {D})
        self.blocks = nn.Sequential(*[Block({D}) for _ in range({LAYERS})])
        self.head = nn.Linear({D}, {V})

    def forward(self, ids):
        return self.head(self.blocks(self.emb(ids)))

def make():
    torch.manual_seed(0)
    ids = torch.randint(0, {V}, ({B}, {T}))
    return {{"model": TinyGPT(), "args": (ids,), "loss": lambda out: out.float().pow(2).mean()}}
"""


def hand_count() -> tuple[int, int]:
    """Forward FLOPs (2*M*N*K per matmul) and backward FLOPs (two matmuls per forward one:
    every matmul's inputs need a gradient, the embedding's output included)."""
    tokens = B * T
    attention = 2 * (2 * B * T * T * D)  # q @ k^T and att @ v
    per_layer = 2 * tokens * D * 3 * D + attention + 2 * tokens * D * D + 2 * (2 * tokens * D * 4 * D)
    forward = LAYERS * per_layer + 2 * tokens * D * V
    return forward, 2 * forward


@pytest.fixture()
def model_file(tmp_path: Path) -> str:
    path = tmp_path / "tiny_gpt.py"
    path.write_text(MODEL, encoding="utf-8")
    return f"{path}:make"


def test_flops_are_counted_forward_and_backward(model_file):
    pytest.importorskip("torch")
    from migrate.perf.analyze.flops import count_flops

    forward, backward = hand_count()
    got = count_flops(model_file)
    assert got["forward"] == forward
    assert got["backward"] == backward
    assert got["total"] == forward + backward == 3 * forward


def test_mfu_of_a_real_a100_trace_is_flops_over_step_over_peak(profiles):
    side = read_side([profiles / "gpu" / "alexnet_a100_trace.json.gz"])
    step_us = side.ranks[0].mean_step_us
    flops = 1e15
    got = mfu_for(side.ranks, {"total": flops, "source": "--flops"})
    assert got["chip"] == "A100" and got["device_name"].startswith("NVIDIA A100")
    assert got["peak_flops"] == 312e12 and got["dtype"] == "bf16" and got["dtype_source"] == "default"
    assert got["mfu"] == pytest.approx(flops / (step_us * 1e-6) / 312e12)
    fp32 = mfu_for(side.ranks, {"total": flops, "source": "--flops"}, dtype="fp32")
    assert fp32["mfu"] == pytest.approx(got["mfu"] * 312 / 19.5)


def test_no_peak_is_never_guessed(profiles):
    ascend = read_side([profiles / "ascend" / "timeline_ascend_pt"]).ranks
    flops = {"total": 1e12, "source": "--flops"}
    no_chip = mfu_for(ascend, flops)
    assert no_chip["mfu"] is None and "names no chip" in no_chip["reason"]
    fp32 = mfu_for(ascend, flops, chip="Ascend910B3", dtype="fp32")
    assert fp32["mfu"] is None and "no published fp32 peak" in fp32["reason"]
    given = mfu_for(ascend, flops, chip="Ascend910B3")
    assert given["chip"] == "Ascend910B" and given["chip_source"] == "--chip"
    assert given["mfu"] == pytest.approx(1e12 / (ascend[0].mean_step_us * 1e-6) / 354e12)


def test_the_profile_chip_wins_over_a_wrong_chip_option(profiles):
    ranks = read_side([profiles / "gpu" / "alexnet_a100_trace.json.gz"]).ranks
    got = mfu_for(ranks, {"total": 1e12, "source": "--flops"}, chip="H100")
    assert got["chip"] == "A100" and got["chip_source"] == "profile"


def test_bad_chip_or_dtype_is_a_usage_error():
    with pytest.raises(UsageError, match="not in the chip table"):
        check_chip("Voodoo5")
    with pytest.raises(UsageError, match="not a compute dtype"):
        check_dtype("fp13")
    assert check_dtype("torch.bfloat16") == "bf16" and check_dtype("half") == "fp16"


def test_analyze_with_a_model_gives_mfu_and_the_gate_judges_it(profiles, model_file):
    pytest.importorskip("torch")
    trace = profiles / "gpu" / "alexnet_a100_trace.json.gz"
    report = analyze(PerfRequest([trace], model=model_file, fail_on={"mfu": 0.5}))
    forward, backward = hand_count()
    assert report.mfu["flops_per_step"] == forward + backward
    assert 0 < report.mfu["mfu"] < 1e-6  # a tiny model over a 12.9 s window
    assert report.gate["failed"] and "MFU" in report.gate["violations"][0]


def test_mfu_above_the_peak_says_the_inputs_are_wrong(profiles):
    ranks = read_side([profiles / "gpu" / "nccl_data.json.gz"]).ranks
    too_many = mfu_for(ranks, {"total": 1e15, "source": "--flops"})
    assert too_many["mfu"] > 1 and "above 100%" in too_many["note"]
    honest = mfu_for(ranks, {"total": 2e13, "source": "--flops"})
    assert 0 < honest["mfu"] < 1 and "note" not in honest


def test_profiles_of_several_runs_get_no_mfu(profiles):
    report = analyze(PerfRequest([profiles], flops=1e12))  # the shared folder: 5 runs
    assert report.mfu["mfu"] is None and "not one run" in report.mfu["reason"]
