"""`migrate sensitivity`: wall time per unit against a plain forward, side by side in one run.

    python benchmarks/bench_sensitivity.py [--layers 6] [--batches 4] [--formats bf16,int8]

The model is bench_precision.py's GPT-style decoder (d=512, vocab 8192; 6 blocks are
about 27 M parameters) with a calibration set of ``--batches`` batches of 4 x 128 tokens.
For each format it times, in this process, plain forwards over the calibration set (best
of 3, before and after, so load from other processes on a shared machine hits both) and
one `run_sensitivity` over every leaf module (``--unit module``), timing each unit from
the progress callback. Prints per format: units measured, median and max seconds per
unit, their ratio to one plain pass over the calibration set (the lowered pass costs the
forward plus the rounding of one unit's weights and activations), and the whole run's wall
time in plain passes (N units + 1 reference + keep-set checks + outlier pass).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(Path(__file__).resolve().parent)]

from bench_precision import build  # noqa: E402


def plain(model, batches) -> float:
    import torch

    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        with torch.no_grad():
            for args, kwargs in batches:
                model(*args, **kwargs)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    import torch

    from migrate.precision.sensitivity import run_sensitivity
    from migrate.precision.sensitivity.formats import parse_format
    from migrate.precision.thresholds import load_gate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--formats", default="bf16,int8")
    ap.add_argument("--max-units", type=int, default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)  # run_sensitivity runs on one intra-op thread
    model, _ = build("ref", a.layers, 4, 128)
    gen = torch.Generator().manual_seed(3)
    batches = [((torch.randint(0, 8192, (4, 128), generator=gen),), {}) for _ in range(a.batches)]
    params = sum(p.numel() for p in model.parameters())
    print(
        f"GPT-style decoder, {a.layers} blocks, {params / 1e6:.1f} M parameters; "
        f"calibration {a.batches} batches of 4 x 128 tokens; torch {torch.__version__}, "
        "1 intra-op thread"
    )
    for name in a.formats.split(","):
        fmt = parse_format(name, "channel")
        before = plain(model, batches)
        stamps: list[float] = [time.perf_counter()]
        tick = stamps.append
        t0 = time.perf_counter()
        report = run_sensitivity(
            model,
            batches,
            fmt,
            gate=load_gate(None),
            max_units=a.max_units,
            progress=lambda *_, tick=tick: tick(time.perf_counter()),
        )
        total = time.perf_counter() - t0
        after = plain(model, batches)
        fwd = min(before, after)
        # the first stamp is taken before the reference pass: drop that interval
        per_unit = [b - a for a, b in zip(stamps[1:], stamps[2:])]
        med, top = statistics.median(per_unit), max(per_unit)
        print(
            f"{fmt.label():>22}: {report['units']['measured']} units, plain pass over the "
            f"calibration set {fwd:.3f} s; per unit median {med:.3f} s = {med / fwd:.2f}x "
            f"a plain pass (max {top / fwd:.2f}x); whole run {total:.1f} s = "
            f"{total / fwd:.0f} plain passes; keep {len(report['keep']['units'])} units "
            f"({report['keep']['params_share']:.1%} of parameters)"
        )


if __name__ == "__main__":
    main()
