"""Side-by-side benchmark: msprobe (mindstudio-probe) vs `migrate dump/compare`.

Same ~27M-parameter GPT-style model, same inputs, same tensor coverage (every module
except the root: forward inputs, outputs and the module's own parameters, which msprobe's
L0 "tensor" task always records). Each dump and each compare runs in its own process;
peak RSS is that process's. Prints dump time (and its ratio to a plain forward pass),
compare time, dump size and peak RSS for both tools.

msprobe lives in its own venv so it cannot disturb ours:
    python3 -m venv /work/venv_msprobe
    /work/venv_msprobe/bin/pip install torch==2.13.0 mindstudio-probe==26.2.0
Point MSPROBE_PYTHON (or --msprobe-python) at that interpreter.

Then it times `migrate replay` of the faulty target and prints the quality tables of
precision_tables.py (replay time and culprit on real transformers models; what stats-only
dumps detect and falsely flag). `--tables-only` prints just those (no msprobe needed).

Run from the repository root:  /work/venv/bin/python benchmarks/bench_precision.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from precision_tables import tables  # noqa: E402

DEFAULT_MSPROBE = os.environ.get("MSPROBE_PYTHON", "/work/venv_msprobe/bin/python")
PYCACHE = os.path.join(tempfile.gettempdir(), "bench_precision_pycache")


# -- model (plain torch, importable from both venvs) ---------------------------------------
def build(variant: str, layers: int, batch: int, seq: int):
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.h = h
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(y.transpose(1, 2).reshape(b, t, d))

    class Block(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = Attention(d, h)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self, vocab=8192, d=512, h=8, n=6, ctx=256):
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(ctx, d)
            self.blocks = nn.ModuleList(Block(d, h) for _ in range(n))
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln(x))

    torch.manual_seed(0)
    model = GPT(n=layers).eval()
    if variant == "tgt":
        with torch.no_grad():
            model.blocks[layers // 2].mlp[0].weight[:8] *= 1.01
    ids = torch.randint(0, 8192, (batch, seq), generator=torch.Generator().manual_seed(1))
    return model, ids


def _forward_s(model, ids) -> float:
    import torch

    with torch.no_grad():
        t0 = time.perf_counter()
        model(ids)
        return time.perf_counter() - t0


def replay_worker(ref: Path, layers: int, batch: int, seq: int, reps: int) -> None:
    """Time `replay` of the faulty target against the reference dump (made with inputs)."""
    import torch

    torch.set_num_threads(2)
    sys.path.insert(0, str(REPO))
    from migrate.precision.replay import replay_model

    model, ids = build("tgt", layers, batch, seq)
    _forward_s(model, ids)
    fwd = min(_forward_s(model, ids) for _ in range(reps))
    times, culprit = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        result = replay_model(model, ref, args=(ids,))
        times.append(time.perf_counter() - t0)
        culprit = result.culprit
    modules = len(list(model.modules()))
    print(json.dumps({"forward_s": fwd, "replay_s": min(times), "modules": modules, "culprit": culprit}))


def worker(tool: str, variant: str, out: Path, layers: int, batch: int, seq: int, reps: int) -> None:
    """Alternate plain forwards and dumps ``reps`` times; print the minima (robust to load
    from other processes on a shared machine). Dump i goes to out/rep{i} resp. out/step{i}."""
    import torch

    torch.set_num_threads(2)
    model, ids = build(variant, layers, batch, seq)
    _forward_s(model, ids)  # warm-up
    fwd, dumps = [], []
    if tool == "ours":
        sys.path.insert(0, str(REPO))
        from migrate.precision.dumper import dump

        for i in range(reps):
            fwd.append(_forward_s(model, ids))
            t0 = time.perf_counter()
            with torch.no_grad(), dump(model, out / f"rep{i}", inputs=True, params=True, exclude=["<root>"]):
                model(ids)
            dumps.append(time.perf_counter() - t0)
    else:
        from msprobe.pytorch import PrecisionDebugger

        cfg = out.parent / f"{out.name}.config.json"
        cfg.write_text(
            json.dumps(
                {
                    "task": "tensor",
                    "dump_path": str(out),
                    "rank": [],
                    "step": [],
                    "level": "L0",
                    "async_dump": False,
                    "tensor": {"scope": [], "list": [], "data_mode": ["forward"]},
                }
            )
        )
        t0 = time.perf_counter()
        debugger = PrecisionDebugger(config_path=str(cfg))
        init = time.perf_counter() - t0
        for i in range(reps):
            fwd.append(_forward_s(model, ids))
            t0 = time.perf_counter()
            debugger.start(model=model)
            with torch.no_grad():
                model(ids)
            debugger.stop()
            debugger.step()
            dumps.append(time.perf_counter() - t0 + (init if i == 0 else 0.0))
    print(json.dumps({"forward_s": min(fwd), "dump_s": min(dumps), "dump_all": dumps}))


# -- driver ---------------------------------------------------------------------------------
def run(cmd: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, stdout) of one child process."""
    full = {**os.environ, **(env or {})}
    # Both tools run with their bytecode cached, as installed tools do (msprobe's
    # site-packages hold .pyc files; an editable checkout under PYTHONDONTWRITEBYTECODE
    # would recompile every module in every run): a shared cache folder, warm after the
    # first run of each command.
    full.pop("PYTHONDONTWRITEBYTECODE", None)
    full["PYTHONPYCACHEPREFIX"] = PYCACHE
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full,
        cwd=REPO,
    )
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{err[-3000:]}")
    rss = _child_maxrss_mib()
    return wall, rss, out


def _child_maxrss_mib() -> float:
    """Peak RSS of the child just waited for: RUSAGE_CHILDREN keeps the running maximum, so
    each measured child runs after a fresh reset via a forked probe (see main)."""
    import resource

    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def measured(cmd: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """Run ``cmd`` in a fresh grandchild so RUSAGE_CHILDREN holds only its peak."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            wall, rss, out = run(cmd, env)
            os.write(w, json.dumps([wall, rss, out]).encode())
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 1 << 16):
        chunks.append(chunk)
    os.waitpid(pid, 0)
    if not chunks:
        raise SystemExit(f"benchmark child failed: {' '.join(cmd)}")
    wall, rss, out = json.loads(b"".join(chunks))
    return wall, rss, out


def du_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def count_ours(path: Path) -> int:
    return len(json.loads((path / "manifest.json").read_text())["records"])


def count_msprobe(path: Path) -> int:
    dump_json = next(path.rglob("dump.json"))
    data = json.loads(dump_json.read_text())["data"]
    n = 0
    for entry in data.values():
        n += len(entry.get("input_args", [])) + len(entry.get("input_kwargs", {}))
        n += len(entry.get("output", [])) + len(entry.get("parameters", {}))
    return n


def bench_tool(tool: str, py: str, work: Path, shape: list[str], reps: int) -> dict:
    me = str(Path(__file__).resolve())
    res = {}
    dirs = {}
    for variant in ("ref", "tgt"):
        out = work / f"{tool}_{variant}"
        wall, rss, stdout = measured(
            [py, me, "--worker", tool, "--variant", variant, "--out", str(out), "--reps", str(reps), *shape]
        )
        info = json.loads(stdout.strip().splitlines()[-1])
        dirs[variant] = out / ("rep0" if tool == "ours" else "step0")
        if variant == "ref":
            res.update(
                forward_s=info["forward_s"],
                dump_s=info["dump_s"],
                dump_rss=rss,
                size_mib=du_mib(dirs[variant]),
            )
    if tool == "ours":
        res["records"] = count_ours(dirs["ref"])
        cmd = [
            py,
            "-m",
            "migrate",
            "compare",
            str(dirs["ref"]),
            str(dirs["tgt"]),
            "--format",
            "json",
            "-o",
            str(work / "ours_compare.json"),
        ]
    else:
        res["records"] = count_msprobe(dirs["ref"])
        cmd = [
            str(Path(py).parent / "msprobe"),
            "compare",
            "-gp",
            str(next(dirs["ref"].rglob("dump.json"))),
            "-tp",
            str(next(dirs["tgt"].rglob("dump.json"))),
            "-o",
            str(work / "ms_cmp"),
        ]
    times, peaks = [], []
    for _ in range(reps):
        wall, rss, _ = measured(cmd)
        times.append(wall)
        peaks.append(rss)
    res["compare_s"], res["compare_rss"] = min(times), max(peaks)
    res["compare_first_s"] = times[0]  # the dump's pages maybe not cached yet (O_DIRECT)
    if tool == "ours":
        _, _, stdout = measured(
            [py, me, "--worker", "replay", "--out", str(dirs["ref"]), "--reps", str(reps), *shape]
        )
        info = json.loads(stdout.strip().splitlines()[-1])
        res["replay_s"], res["replay_fwd_s"] = info["replay_s"], info["forward_s"]
        res["replay_modules"] = info["modules"]
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", choices=["ours", "msprobe", "replay"])
    ap.add_argument(
        "--tables-only",
        action="store_true",
        help="Only the replay and stats-only quality tables (no msprobe).",
    )
    ap.add_argument(
        "--no-tables", action="store_true", help="Only the msprobe side-by-side (skip the quality tables)."
    )
    ap.add_argument("--variant", default="ref")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--msprobe-python", default=DEFAULT_MSPROBE)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument(
        "--repeat",
        type=int,
        default=2,
        help="Rounds per tool, interleaved; medians of the rounds are reported.",
    )
    ap.add_argument(
        "--reps",
        type=int,
        default=3,
        help="Dumps / compares per round; the minimum is kept (noisy machines).",
    )
    a = ap.parse_args()
    shape = ["--layers", str(a.layers), "--batch", str(a.batch), "--seq", str(a.seq)]
    if a.worker == "replay":
        replay_worker(a.out, a.layers, a.batch, a.seq, a.reps)
        return
    if a.worker:
        worker(a.worker, a.variant, a.out, a.layers, a.batch, a.seq, a.reps)
        return
    if a.tables_only:
        print(tables())
        return
    if not Path(a.msprobe_python).exists():
        raise SystemExit(
            f"msprobe interpreter not found at {a.msprobe_python}; create the venv "
            "described at the top of this file or set MSPROBE_PYTHON"
        )
    runs: dict[str, list[dict]] = {"ours": [], "msprobe": []}
    for i in range(a.repeat):
        order = [("ours", sys.executable), ("msprobe", a.msprobe_python)]
        for tool, py in order if i % 2 == 0 else order[::-1]:
            with tempfile.TemporaryDirectory(dir=a.workdir) as tmp:
                runs[tool].append(bench_tool(tool, py, Path(tmp), shape, a.reps))
            print(
                f"run {i + 1}/{a.repeat} {tool}: "
                + json.dumps({k: round(v, 3) for k, v in runs[tool][-1].items()}),
                file=sys.stderr,
            )
    report(_median(runs["ours"]), _median(runs["msprobe"]), a, runs)


def _median(rows: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def report(ours: dict, ms: dict, a, runs: dict[str, list[dict]]) -> None:
    print(
        f"model: GPT-style, {a.layers} blocks, d=512, vocab 8192, batch {a.batch} x seq "
        f"{a.seq}; times: best of {a.reps} per round, median of {a.repeat} interleaved rounds"
    )
    print(f"{'':24}{'msprobe 26.2.0':>16}{'migrate':>12}{'speed-up':>10}")
    rows = [
        ("tensors recorded", "records", "{:.0f}"),
        ("plain forward [s]", "forward_s", "{:.3f}"),
        ("dump [s]", "dump_s", "{:.2f}"),
        ("compare [s]", "compare_s", "{:.2f}"),
        ("compare, first run [s]", "compare_first_s", "{:.2f}"),
        ("dump size [MiB]", "size_mib", "{:.1f}"),
        ("dump peak RSS [MiB]", "dump_rss", "{:.0f}"),
        ("compare peak RSS [MiB]", "compare_rss", "{:.0f}"),
    ]
    for label, key, fmt in rows:
        speed = f"{ms[key] / ours[key]:.1f}x" if key.endswith("_s") and key != "forward_s" else ""
        print(f"{label:24}{fmt.format(ms[key]):>16}{fmt.format(ours[key]):>12}{speed:>10}")
    for name, r in (("msprobe", ms), ("migrate", ours)):
        print(f"{name}: dump = {r['dump_s'] / r['forward_s']:.1f} x plain forward")
    print(
        f"migrate replay (every module on reference inputs, one pass): "
        f"{ours['replay_s']:.2f} s = {ours['replay_s'] / ours['replay_fwd_s']:.1f} x plain "
        f"forward ({ours['replay_modules']:.0f} modules); msprobe has no replay"
    )
    for key in ("dump_s", "compare_s"):  # each round's tools ran side by side
        ratios = [m[key] / o[key] for o, m in zip(runs["ours"], runs["msprobe"])]
        print(f"{key[:-2]} speed-up per round: " + ", ".join(f"{r:.1f}x" for r in ratios))
    if not a.no_tables:
        print()
        print(tables())


if __name__ == "__main__":
    main()
