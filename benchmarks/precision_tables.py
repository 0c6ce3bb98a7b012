"""Quality tables for bench_precision.py: replay time against a forward pass, and what a
stats-only dump detects (and falsely flags) on real transformers models.

Models: tests/precision/hf_models.py (GPT-2, BERT, Llama, T5, ViT, ResNet, ConvNext tiny
configs; decoders with use_cache=True). Faults: 4 output rows of one weight scaled by
1 + s; honest runs: another fp32 device (float64-exact matmul rounded back), emulated
HF32, bf16 and fp16. All in one process, side by side.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "precision")]

FAULTS = (0.05, 0.2, 0.5)
HONEST = ("other", "hf32", "bf16", "fp16")


def _run(name, out, mode="fp32", fault=None, **kw):
    import hf_models as H

    return H.dump_run(out, name, mode, fault, **kw)


def _forward_s(model, args, kwargs, reps=3) -> float:
    import torch

    best = float("inf")
    for _ in range(reps):
        with torch.no_grad():
            t0 = time.perf_counter()
            model(*args, **kwargs)
            best = min(best, time.perf_counter() - t0)
    return best


def replay_table(work: Path) -> list[str]:
    import hf_models as H

    from migrate.precision.replay import replay_model

    rows = [
        f"{'model':10}{'forward [s]':>13}{'replay [s]':>12}{'ratio':>8}"
        f"{'per module [ms]':>17}  culprit (fault 0.05 on one weight)"
    ]
    for name in H.MODELS:
        ref = work / f"{name}_replay_ref"
        _run(name, ref, inputs=True)
        model, args, kwargs = H.build(name)
        H.perturb(model, H.FAULT_SITES[name], 0.05)
        fwd = _forward_s(model, args, kwargs)
        t0 = time.perf_counter()
        result = replay_model(model, ref, args=args, kwargs=kwargs)
        total = time.perf_counter() - t0
        right = result.culprit and result.culprit["name"] == H.FAULT_SITES[name]
        per = 1000 * total / max(1, result.replay_stats["outputs"])
        rows.append(
            f"{name:10}{fwd:13.3f}{total:12.3f}{total / fwd:8.1f}{per:17.1f}  "
            f"{'right' if right else 'WRONG: ' + str(result.culprit)}"
        )
    return rows


def stats_table(work: Path) -> list[str]:
    import hf_models as H

    from migrate.precision.compare import compare_dumps

    head = f"{'model':10}" + "".join(f"{f'fp32 {s:g}':>11}{f'bf16 {s:g}':>11}" for s in FAULTS)
    rows = [head + f"  false alarms ({'/'.join(HONEST)})"]
    totals = {"found": 0, "named": 0, "faults": 0, "alarms": 0, "honest": 0}
    for name in H.MODELS:
        ref = work / f"{name}_stats_ref"
        _run(name, ref, stats_only=True)
        line = f"{name:10}"
        for scale in FAULTS:
            for mode in ("fp32", "bf16"):
                out = work / f"{name}_{mode}_{scale}"
                _run(name, out, mode, fault=scale, stats_only=True)
                res = compare_dumps(ref, out)
                found = not res
                site = H.FAULT_SITES[name]
                named = found and (
                    (res.first_divergence or {}).get("name") == site
                    or any(w["name"] == f"{site}.weight" for w in res.weights)
                )
                totals["faults"] += 1
                totals["found"] += found
                totals["named"] += bool(named)
                line += f"{'named' if named else ('found' if found else 'missed'):>11}"
        alarms = []
        for mode in HONEST:
            out = work / f"{name}_honest_{mode}"
            _run(name, out, mode, stats_only=True)
            res = compare_dumps(ref, out)
            alarms.append(str(sum(1 for e in res.entries if e["status"] == "fail")))
            totals["honest"] += 1
            totals["alarms"] += not res
        rows.append(line + f"  {'/'.join(alarms)}")
    rows.append(
        f"stats-only: {totals['found']}/{totals['faults']} faults found, "
        f"{totals['named']}/{totals['faults']} at the faulty module (first divergence or "
        f"weights root cause); "
        f"{totals['alarms']}/{totals['honest']} honest runs failed"
    )
    return rows


def tables() -> str:
    import torch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        out = ["replay (one pass, reference inputs fed to every module; caches on):"]
        out += replay_table(work)
        out += [
            "",
            "stats-only dumps (no tensors; 64-bucket sketch per tensor): fault on 4 "
            "rows of one weight, scaled by 1 + s",
        ]
        out += stats_table(work)
    return "\n".join(out)


if __name__ == "__main__":
    print(tables())
