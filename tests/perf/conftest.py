"""Fixtures of the perf tests: the real profiles of ../shared/data/profiles, and Kineto traces
recorded here on the CPU (torch.profiler, a tiny model whose host syncs and steps are known)."""

from __future__ import annotations

from pathlib import Path

import pytest
from perf_data import profiles_dir


@pytest.fixture(scope="session")
def profiles() -> Path:
    found = profiles_dir()
    if found is None:
        pytest.skip("../shared/data/profiles not found beside the repository")
    return found


TRAIN = """
import sys
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.Adam(model.parameters())
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))


def train_step():
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    for _ in range(SYNCS):
        loss.item()  # a host sync on an accelerator


with profile(
    activities=[ProfilerActivity.CPU],
    schedule=schedule(wait=0, warmup=1, active=STEPS, repeat=1),
    on_trace_ready=tensorboard_trace_handler(sys.argv[1]),
    with_stack=True,
    record_shapes=True,
) as prof:
    for _ in range(STEPS + 2):
        train_step()
        prof.step()
"""


def record_cpu_trace(folder: Path, steps: int = 3, syncs: int = 2) -> Path:
    """Run a tiny training loop under torch.profiler on the CPU; the trace file it wrote."""
    import subprocess
    import sys

    pytest.importorskip("torch")
    script = folder / "train_tiny.py"
    script.write_text(TRAIN.replace("SYNCS", str(syncs)).replace("STEPS", str(steps)), encoding="utf-8")
    out = folder / "trace"
    subprocess.run([sys.executable, str(script), str(out)], check=True, capture_output=True, timeout=600)
    traces = sorted(out.glob("*.pt.trace.json"), key=lambda p: p.stat().st_size)
    assert traces, "torch.profiler wrote no trace"
    return traces[-1]


@pytest.fixture(scope="session")
def cpu_trace(tmp_path_factory) -> Path:
    return record_cpu_trace(tmp_path_factory.mktemp("kineto"))
