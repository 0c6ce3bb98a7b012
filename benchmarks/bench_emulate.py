"""Emulation overhead: the same training script on the plain CPU and under
`migrate run --emulate npu`, side by side in one run.

The script (written to a temp folder) trains a small GPT-style model (embeddings, 4
attention blocks with SDPA, MLP, AdamW) for --steps steps on --device; it times the steps
itself after --warmup steps, so process start-up and imports are not counted. It runs
``--device cpu`` as a plain python process, then ``--device npu`` under the emulation
(monitor on, as users run it), both with --threads intra-op threads. Prints both step
times, their ratio, and the total wall-clock times including start-up.

Run from the repository root:  /work/venv/bin/python benchmarks/bench_emulate.py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SCRIPT = """
import json, sys, time
import torch
from torch import nn
import torch.nn.functional as F

device, out = sys.argv[1], sys.argv[5]
steps, warmup, width = (int(a) for a in sys.argv[2:5])
torch.manual_seed(0)

class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h, self.ln1, self.ln2 = h, nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.h, d // self.h).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.mlp(self.ln2(x))

blocks = [Block(width, 4) for _ in range(4)]
model = nn.Sequential(nn.Embedding(512, width), *blocks, nn.Linear(width, 512)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = torch.randint(0, 512, (8, 65)).to(device)
times = []
for step in range(warmup + steps):
    t0 = time.perf_counter()
    logits = model(data[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, 512), data[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    loss_value = loss.item()
    if step >= warmup:
        times.append(time.perf_counter() - t0)
json.dump({"step_s": sorted(times)[len(times) // 2], "loss": loss_value}, open(out, "w"))
"""


def run(argv: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of both runs")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": str(args.threads)}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "train.py"
        script.write_text(SCRIPT, encoding="utf-8")
        common = [str(args.steps), str(args.warmup), str(args.width)]
        plain_wall = run([sys.executable, str(script), "cpu", *common, f"{tmp}/cpu.json"], env)
        emu_wall = run(
            [
                sys.executable,
                "-m",
                "migrate",
                "run",
                "--emulate",
                "npu",
                "-f",
                "none",
                "--",
                "python",
                str(script),
                "npu",
                *common,
                f"{tmp}/npu.json",
            ],
            env,
        )
        cpu, npu = (json.loads(Path(tmp, f"{n}.json").read_text()) for n in ("cpu", "npu"))
    print(f"model width {args.width}, 4 blocks, batch 8x64, median of {args.steps} steps")
    print(f"plain CPU      : {cpu['step_s'] * 1000:8.1f} ms/step   (wall {plain_wall:5.1f} s)")
    print(f"emulated NPU   : {npu['step_s'] * 1000:8.1f} ms/step   (wall {emu_wall:5.1f} s)")
    print(
        f"overhead ratio : {npu['step_s'] / cpu['step_s']:8.2f}x per step, "
        f"{emu_wall / plain_wall:.2f}x wall clock"
    )
    print(f"final loss     : cpu {cpu['loss']:.6f}  npu {npu['loss']:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
