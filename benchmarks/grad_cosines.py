"""Honest low-precision gradient cosines of convolutional networks: the measurement behind
the ``grad_cosine_min`` of thresholds.yaml's bfloat16 and float16 classes.

For each model (transformers configs, random init, no downloads; ResNet-50 is
``ResNetConfig()``'s default, 25.6 M parameters) and input seed: an fp32 training step
(probe loss, dropout off) against the same step in bf16 and fp16, every module's input,
output and weight gradient compared by the default gate. Prints, per model and class, the
lowest cosine among the gradients the gate judges by cosine (above the class's smallest
normal and the gradient floor), the entry, and what the gate made of it; then per class
the lowest over all models and its margin to the bound, (1 - bound) / (1 - cosine). Run:
PYTHONPATH=. python benchmarks/grad_cosines.py [--models a,b] [--seeds 3] (ResNet-50 at
64x64 takes about a minute a step on 2 shared cores).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "precision"), str(REPO / "benchmarks")]

import torch  # noqa: E402
from precision_sweep import build, train_dump  # noqa: E402

from migrate.precision.compare import compare_dumps  # noqa: E402
from migrate.precision.runner import cast_model, move  # noqa: E402
from migrate.precision.thresholds import load_gate  # noqa: E402

GATE = load_gate()
LOW = {"bf16": torch.bfloat16, "fp16": torch.float16}
CONV = ("resnet50", "resnet50_32", "resnet", "convnext", "regnet", "efficientnet", "mobilenet")


def build_conv(name: str, seed: int):
    """``(model, args, kwargs)``: the ResNet-50s here, the sweep's others; pixels from ``seed``."""
    import transformers as tf

    torch.manual_seed(0)
    if name.startswith("resnet50"):
        size = 32 if name.endswith("_32") else 64
        model, kwargs = tf.ResNetForImageClassification(tf.ResNetConfig()), {}
    else:
        model, (x,), kwargs = build(name)
        size = x.shape[-1]
    pixels = torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(seed))
    return model.eval(), (pixels,), kwargs


def lowest(result, fresh: bool) -> dict | None:
    """The backward entry of lowest cosine among those judged by cosine: judged on their
    own (``fresh``: not carried, the bound decides them) or carried (warned whatever
    their cosine: their error was handed to them)."""
    rows = []
    for e in result.entries:
        if not e["kind"].startswith("backward") or e.get("cosine") is None:
            continue
        if "smallest normal" in e["reason"] or ("carried:" in e["reason"]) == fresh:
            continue
        rows.append(e)
    return min(rows, key=lambda e: e["cosine"]) if rows else None


def measure(name: str, seed: int, work: Path) -> dict[str, dict | None]:
    train_dump(work / "ref", *build_conv(name, seed))
    out = {}
    for mode, dtype in LOW.items():
        model, args, kwargs = build_conv(name, seed)
        model = cast_model(model, dtype)
        train_dump(work / mode, model, move(args, "cpu", dtype), move(kwargs, "cpu", dtype))
        res = compare_dumps(work / "ref", work / mode)
        for what, fresh in (("fresh", True), ("carried", False)):
            low = lowest(res, fresh)
            out[f"{mode} {what}"] = low and {
                "cosine": low["cosine"],
                "entry": f"{low['name']}:{low['kind']}",
                "status": low["status"],
                "scale_err": low.get("scale_err"),
                "rel_err": low.get("rel_err"),
                "passed": bool(res),
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(CONV))
    ap.add_argument("--seeds", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(1)
    worst: dict[str, tuple[float, str]] = {}
    for name in a.models.split(","):
        for seed in range(1, a.seeds + 1):
            with tempfile.TemporaryDirectory() as tmp:
                got = measure(name, seed, Path(tmp))
            for mode, low in got.items():
                if low is None:
                    continue
                print(
                    f"{name:13} seed {seed} {mode}: lowest cosine {low['cosine']:.4f} at {low['entry']} "
                    f"({low['status']}, rel_err {low['rel_err'] or 0:.3f}, "
                    f"scale_err {low['scale_err'] or 0:.3f}; compare "
                    f"{'passes' if low['passed'] else 'fails'})",
                    flush=True,
                )
                if low["cosine"] < worst.get(mode, (2.0, ""))[0]:
                    worst[mode] = (low["cosine"], f"{name} seed {seed} {low['entry']}")
    for mode, (cos, where) in sorted(worst.items()):
        bound = GATE.dtypes["bfloat16" if mode.startswith("bf16") else "float16"]["grad_cosine_min"]
        print(
            f"{mode}: lowest honest gradient cosine {cos:.4f} ({where}); bound {bound}, margin "
            f"{(1 - bound) / max(1 - cos, 1e-12):.2f}x"
        )


if __name__ == "__main__":
    main()
