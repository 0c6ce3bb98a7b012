"""Run the model over the calibration batches and measure a lowering's end-to-end effect:
output cosine and relative error (every floating output, all batches together), top-1
agreement (argmax over the last dim of logits-like outputs) and the loss change (when the
spec has a loss)."""

from __future__ import annotations

import math
from typing import Any

from migrate.precision.flatten import iter_tensors
from migrate.precision.metrics.pair import Pair
from migrate.precision.metrics.tensor import cosine, rel_err


def run_batches(model: Any, batches: list[tuple[tuple, dict]]) -> list[Any]:
    import torch

    with torch.no_grad():
        return [model(*args, **kwargs) for args, kwargs in batches]


def _floats(outputs: list[Any]) -> list[Any]:
    import torch

    out = []
    for o in outputs:
        out += [t.detach().float().reshape(-1) for _, t in iter_tensors(o) if t.is_floating_point()]
    return [torch.cat(out)] if out else []


def _top1(ref: list[Any], got: list[Any]) -> float | None:
    same = total = 0
    for r, g in zip(ref, got):
        for (_, a), (_, b) in zip(iter_tensors(r), iter_tensors(g)):
            if a.is_floating_point() and a.dim() >= 2 and a.shape[-1] > 1 and a.shape == b.shape:
                same += int((a.argmax(-1) == b.argmax(-1)).sum())
                total += a[..., 0].numel()
                break  # the first logits-like output of each batch
    return same / total if total else None


def _loss(outputs: list[Any], loss: Any) -> float | None:
    if loss is None:
        return None
    values = [float(loss(o)) for o in outputs]
    return sum(values) / len(values)


def output_metrics(ref: Any, got: Any) -> dict[str, Any]:
    """Cosine, relative error and NaN/Inf counts of the outputs: the two metrics the
    effect holds (norms only; the elementwise metrics would cost as much as the forward
    on a large vocabulary's logits)."""
    pair = Pair(ref, got, {"rtol": 0.0, "atol_rms": 0.0})
    return {"cosine": cosine(pair), "rel_err": rel_err(pair), "nan": pair.nan, "inf": pair.inf}


def effect(
    ref: list[Any], got: list[Any], loss: Any = None, ref_loss: float | None = None
) -> dict[str, float | None]:
    """The effect of a lowering: ``{"cosine", "rel_err", "top1_agreement", "loss",
    "loss_delta", "nonfinite"}``."""
    a, b = _floats(ref), _floats(got)
    if not a:
        return {
            "cosine": None,
            "rel_err": None,
            "top1_agreement": None,
            "loss": None,
            "loss_delta": None,
            "nonfinite": 0,
        }
    m = output_metrics(a[0], b[0])
    nonfinite = int(m.get("nan") or 0) + int(m.get("inf") or 0)
    value = _loss(got, loss)
    delta = None if value is None or ref_loss is None else value - ref_loss
    rel = m["rel_err"] if not nonfinite else math.inf
    return {
        "cosine": m["cosine"] if not nonfinite else 0.0,
        "rel_err": rel,
        "top1_agreement": _top1(ref, got),
        "loss": value,
        "loss_delta": delta,
        "nonfinite": nonfinite,
    }


def severity(e: dict) -> float:
    """One number to rank by: relative error, inf when the output became non-finite."""
    rel = e.get("rel_err")
    return math.inf if rel is None or (isinstance(rel, float) and math.isnan(rel)) else rel


def outlier_stats(
    model: Any, batches: list[tuple[tuple, dict]], modules: list[str], top: int = 3
) -> list[dict]:
    """Per-channel activation maxima at the inputs of ``modules`` (Linear: last dim, Conv:
    dim 1): the largest channel against the median channel (massive activations are
    10-100x), most outlying first."""
    import torch

    amax: dict[str, Any] = {}

    def hook(name, conv):
        def fn(mod, args):
            x = next((t for _, t in iter_tensors(args) if t.is_floating_point()), None)
            if x is None or x.dim() < 2:
                return
            dim = 1 if conv else x.dim() - 1
            per = x.detach().abs().float().transpose(dim, -1).reshape(-1, x.shape[dim]).amax(0)
            amax[name] = per if name not in amax else torch.maximum(amax[name], per)

        return fn

    handles = []
    for name in modules:
        mod = model.get_submodule(name)
        conv = isinstance(mod, torch.nn.modules.conv._ConvNd)
        if isinstance(mod, (torch.nn.Linear, torch.nn.modules.conv._ConvNd)):
            handles.append(mod.register_forward_pre_hook(hook(name, conv)))
    try:
        run_batches(model, batches)
    finally:
        for h in handles:
            h.remove()
    rows = []
    for name, per in amax.items():
        med = float(per.median())
        ratio = float(per.max()) / med if med > 0 else math.inf
        order = per.argsort(descending=True)[:top].tolist()
        rows.append(
            {
                "module": name,
                "channels": int(per.numel()),
                "ratio": ratio,
                "max": float(per.max()),
                "median": med,
                "top_channels": order,
            }
        )
    return sorted(rows, key=lambda r: -r["ratio"])
