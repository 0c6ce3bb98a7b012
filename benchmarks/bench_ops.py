"""Benchmark op coverage: ONNX census on a model with >= 1 GB of external weights, and the
cost of the ATen capture relative to a plain forward pass.

    python benchmarks/bench_ops.py [--gib 1.0] [--keep]

Prints census wall time and the census process's peak RSS for the big model and for the
same graph with tiny weights (RSS should not depend on the weights), then the ATen capture
time as a ratio to a plain forward of the same model. The temp dir is deleted afterwards.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CHILD = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
from migrate.ops.onnx_census import census
from migrate.ops.registry import load_onnx
load_onnx("atc")
import onnx  # imports outside the timing
t = time.perf_counter()
report = census({path!r})
dt = time.perf_counter() - t
print(json.dumps({{"seconds": dt, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF)
                  .ru_maxrss / 1024, "nodes": report["nodes"]}}))
"""


def build(folder: Path, layers: int, dim: int, tiny: bool) -> Path:
    """MatMul+Gelu stack; weights written as external data chunk by chunk."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    folder.mkdir(parents=True, exist_ok=True)
    data_name = "weights.bin"
    nodes, inits, prev = [], [], "x"
    rng = np.random.default_rng(0)
    row = dim if not tiny else 1
    with open(folder / data_name, "wb") as fh:
        for i in range(layers):
            shape = [dim, dim] if not tiny else [1, 1]
            offset = fh.tell()
            for _ in range(shape[0] // row if not tiny else 1):
                fh.write(rng.standard_normal((row, shape[1]), dtype=np.float32).tobytes())
            t = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=shape)
            t.data_location = TensorProto.EXTERNAL
            for k, v in (
                ("location", data_name),
                ("offset", str(offset)),
                ("length", str(fh.tell() - offset)),
            ):
                t.external_data.add(key=k, value=v)
            inits.append(t)
            nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"h{i}"], name=f"mm{i}"))
            nodes.append(helper.make_node("Gelu", [f"h{i}"], [f"g{i}"], name=f"gelu{i}"))
            prev = f"g{i}"
    graph = helper.make_graph(
        nodes,
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, dim])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, dim])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    path = folder / "model.onnx"
    onnx.save(model, str(path))
    return path


def census_in_child(path: Path) -> dict:
    code = CHILD.format(root=str(ROOT), path=str(path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_onnx(gib: float, keep: bool) -> None:
    dim, layers = 4096, max(1, round(gib * 2**30 / (4096 * 4096 * 4)))
    tmp = Path(tempfile.mkdtemp(prefix="bench_ops_"))
    try:
        t = time.perf_counter()
        big = build(tmp / "big", layers, dim, tiny=False)
        size = (tmp / "big" / "weights.bin").stat().st_size
        print(
            f"built {layers} x [{dim},{dim}] float32 = {size / 2**30:.2f} GiB external "
            f"weights in {time.perf_counter() - t:.1f} s"
        )
        small = build(tmp / "small", layers, dim, tiny=True)
        rb, rs = census_in_child(big), census_in_child(small)
        print(
            f"onnx census, {rb['nodes']} nodes, {size / 2**30:.2f} GiB weights: "
            f"{rb['seconds'] * 1000:.1f} ms, peak RSS {rb['peak_rss_mb']:.0f} MB"
        )
        print(
            f"onnx census, same graph, tiny weights:      "
            f"{rs['seconds'] * 1000:.1f} ms, peak RSS {rs['peak_rss_mb']:.0f} MB"
        )
        t = time.perf_counter()
        cli = subprocess.run(
            [sys.executable, "-m", "migrate", "ops", str(big), "--format", "json"],
            capture_output=True,
            cwd=ROOT,
        )
        print(
            f"`migrate ops` end to end (process start, imports, registry, census): "
            f"{time.perf_counter() - t:.2f} s, exit {cli.returncode}"
        )
        print(
            f"RSS ratio big/tiny: {rb['peak_rss_mb'] / rs['peak_rss_mb']:.3f} "
            f"(weights / RSS difference: {size / 2**20:.0f} MB / "
            f"{rb['peak_rss_mb'] - rs['peak_rss_mb']:.0f} MB)"
        )
    finally:
        if keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def _gpt(dim: int, layers: int):
    import torch
    from torch import nn
    from torch.nn import functional as F  # noqa: N812

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, 4, dim // 4).unbind(2)
            a = F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
            )
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, dim))
            return x + self.down(F.gelu(self.up(self.ln2(x))))

    torch.manual_seed(0)
    return nn.Sequential(*[Block() for _ in range(layers)]).eval()


def bench_aten(repeats: int) -> None:
    import torch

    from migrate.ops.aten.census import capture

    for dim, layers, batch, seq in ((64, 4, 1, 16), (256, 4, 8, 128)):
        model, x = _gpt(dim, layers), torch.randn(batch, seq, dim)
        capture(model, (x,), {})  # warm: registry, torchgen table
        with torch.no_grad():
            for _ in range(3):
                model(x)  # warm: allocator, kernels
        plain, cap = [], []
        for _ in range(repeats):
            with torch.no_grad():
                t = time.perf_counter()
                model(x)
                plain.append(time.perf_counter() - t)
            t = time.perf_counter()
            census, _ = capture(model, (x,), {})
            cap.append(time.perf_counter() - t)
        p, c = min(plain), min(cap)
        calls = sum(r["count"] for r in census.rows.values())
        print(
            f"aten capture, {layers}-block GPT (d={dim}, {batch}x{seq} tokens, {calls} op "
            f"calls): plain forward {p * 1000:.1f} ms, captured {c * 1000:.1f} ms, "
            f"ratio {c / p:.1f}x (best of {repeats})"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    bench_onnx(args.gib, args.keep)
    bench_aten(args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
