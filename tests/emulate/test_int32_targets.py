"""NPU loss kernels that take int32 targets where the CPU's take int64 only (kernels.py):
F.cross_entropy / F.nll_loss with an int32 target on the emulated NPU, 1-d and 2-d (the
nll_loss2d kernels), forward and backward, against the CPU with the same target in int64."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys, torch, torch_npu
import torch.nn.functional as F
logits, target, maps, labels = torch.load(sys.argv[1])
out = {}
for name, x, t in (("1d", logits, target), ("2d", maps, labels)):
    x = x.npu().requires_grad_()
    t = t.to(torch.int32).npu()
    loss = F.cross_entropy(x, t, ignore_index=2) + F.nll_loss(F.log_softmax(x, 1), t, reduction="sum")
    loss.backward()
    out[name] = (loss.detach().cpu(), x.grad.cpu(), str(t.dtype), str(x.device))
torch.save(out, sys.argv[2])
"""


def test_int32_targets_give_the_int64_losses_and_gradients(tmp_path):
    g = torch.Generator().manual_seed(0)
    data = (
        torch.randn(6, 5, generator=g),
        torch.randint(0, 5, (6,), generator=g),
        torch.randn(2, 4, 3, 3, generator=g),
        torch.randint(0, 4, (2, 3, 3), generator=g),
    )
    torch.save(data, tmp_path / "in.pt")
    (tmp_path / "check.py").write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "migrate", "run", "--emulate", "npu", "--format", "none", "--"]
    cmd += ["python", "check.py", "in.pt", "out.pt"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = torch.load(tmp_path / "out.pt")
    F = torch.nn.functional
    for name, x, t in (("1d", data[0], data[1]), ("2d", data[2], data[3])):
        x = x.clone().requires_grad_()
        loss = F.cross_entropy(x, t, ignore_index=2) + F.nll_loss(F.log_softmax(x, 1), t, reduction="sum")
        loss.backward()
        assert got[name][2:] == ("torch.int32", "npu:0")
        torch.testing.assert_close(got[name][0], loss.detach())
        torch.testing.assert_close(got[name][1], x.grad)
    with pytest.raises(RuntimeError, match="Long"):  # the CPU kernel itself refuses int32
        F.nll_loss(data[0], data[1].to(torch.int32))
