"""Honest and faulty precision runs on 20 real architectures (transformers tiny configs,
random init) and, with --timm, 12 timm models: the false alarms and misses of `compare`,
`replay` and gradient checks.

For every model: an fp32 reference (with inputs), then
  honest forward runs - another fp32 device, emulated HF32, bf16, fp16 (compare; replay
  for bf16 and fp16) - and honest training steps in bf16 and fp16 (gradients, the probe loss);
  faults, each in an fp32 and a bf16 target (caught when compare fails or replay names a
  culprit) - 4 rows of a middle layer's weight x1.5
  (compare, replay), a functional call inside a middle block's own code x1.25 (compare,
  replay must name the block) - and in a bf16 training step: a 25% wrong backward into the
  middle layer of those that run as modules (a backward hook on a layer whose weight its
  parent uses directly never fires: no fault), a weight gradient halved.
An honest run that fails only where NaN/Inf are made by a low-precision step (cause
"range": float16's range, not the port) is a true finding, not a false alarm. A fault is
not counted when it cannot show: it changes a weight but no recorded tensor (activations
vanished to subnormals at random init), or the honest bf16 run already errs at the fault
site by more than the fault (gradients that are noise there).
Prints one row per model and the tallies. Run: python benchmarks/precision_sweep.py
[--models a,b] [--timm] (about 5 minutes for the 20 on 2 shared cores; timm models need
torchvision: PYTHONPATH=. /work/venv214/bin/python benchmarks/precision_sweep.py --timm).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "precision")]

import faults as F  # noqa: E402
import hf_models as H  # noqa: E402
import hf_zoo as Z  # noqa: E402
import timm_zoo as T  # noqa: E402
import torch  # noqa: E402

from migrate.precision.compare import compare_dumps  # noqa: E402
from migrate.precision.dumper import dump  # noqa: E402
from migrate.precision.replay import replay_model  # noqa: E402
from migrate.precision.runner import cast_model, move, probe_loss  # noqa: E402

LOW = {"bf16": torch.bfloat16, "fp16": torch.float16}


def build(name: str):
    if name in T.ZOO:
        return T.build(name)
    return Z.build(name) if name in Z.ZOO else H.build(name)


def lowered(name: str, mode: str):
    model, args, kwargs = build(name)
    if mode in LOW:
        model = cast_model(model, LOW[mode])
        args, kwargs = move(args, "cpu", LOW[mode]), move(kwargs, "cpu", LOW[mode])
    return model, args, kwargs


def forward_dump(out, model, args, kwargs, mode="fp32", ctx=None, **kw):
    meta = H.HF32_META["precision"] if mode == "hf32" else None
    ctx = ctx or {"hf32": H.hf32, "other": H.other_device}.get(mode)
    with torch.no_grad(), dump(model, out, precision=meta, **kw):
        if ctx:
            with ctx():
                model(*args, **kwargs)
        else:
            model(*args, **kwargs)


def train_dump(out, model, args, kwargs, hooks=()):
    model.train()
    for m in model.modules():  # dropout off: both runs must compute the same function
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    with dump(model, out, grads=True):
        probe_loss(Z.main_output(model(*args, **kwargs))).backward()
    for h in hooks:
        h.remove()


def finding_only(result) -> bool:
    """Every failure is NaN/Inf made (or carried) by a low-precision step's range."""
    bad = [e for e in result.entries if e["status"] == "fail"]
    return (
        bool(bad)
        and not result.weights
        and all(e.get("cause") in ("range", "carried") for e in bad)
        and any(e.get("cause") == "range" for e in bad)
    )


def failing(result) -> list[str]:
    return [f"{e['name']}:{e['kind']}:{e['reason']}" for e in result.entries if e["status"] == "fail"] + [
        w["reason"] for w in result.weights
    ]


def sweep(name: str, work: Path) -> dict:
    row = {
        "model": name,
        "alarms": [],
        "misses": [],
        "caught": 0,
        "named": 0,
        "faults": 0,
        "honest": 0,
        "findings": [],
        "unseen": [],
    }
    ref = work / "ref"
    forward_dump(ref, *build(name), inputs=True)
    for mode in ("other", "hf32", "bf16", "fp16"):
        out = work / f"h_{mode}"
        forward_dump(out, *lowered(name, mode), mode=mode)
        res = compare_dumps(ref, out)
        row["honest"] += 1
        _honest(row, f"compare {mode}", res)
    for mode in ("bf16", "fp16"):
        model, args, kwargs = lowered(name, mode)
        rp = replay_model(model, ref, args=args, kwargs=kwargs)
        row["honest"] += 1
        if not rp or rp.culprit:
            row["alarms"].append(f"replay {mode}: {rp.culprit} {rp.inconclusive} {failing(rp)[:2]}")
    for mode in ("fp32", "bf16"):
        _weight_fault(name, mode, ref, work, row)
        _own_code_fault(name, mode, ref, work, row)
    _grads(name, work, row)
    return row


def _ran(ref: Path, site: str) -> bool:
    from migrate.precision.manifest import Dump

    return any(r["name"] == site for r in Dump(ref).records)


def _honest(row, what: str, result) -> None:
    if result:
        return
    if finding_only(result):
        row["findings"].append(f"{what}: {result.first_divergence['reason'][:160]}")
    else:
        row["alarms"].append(f"{what}: {failing(result)[:2]}")


def _judge(
    row,
    what: str,
    result,
    site: str,
    named: str | None,
    ref: Path | None = None,
    unseen: str | None = None,
    replayed=None,
) -> None:
    """Count a fault: caught when compare fails or the replay (``replayed``) names a
    culprit; named right when that name is the faulty module."""
    by_replay = replayed is not None and bool(replayed.culprit)
    if not result and not any(e["status"] == "fail" for e in result.entries) and not by_replay:
        unseen = unseen or "only the weights differ: no recorded tensor resolves the fault"
    if unseen:
        row["unseen"].append(f"{what}: {unseen}")
        return
    row["faults"] += 1
    if result and not by_replay:
        row["misses"].append(
            f"{what}: compare and replay passed" if replayed is not None else f"{what}: compare passed"
        )
        return
    if result:
        row["by_replay"] = row.get("by_replay", 0) + 1
    row["caught"] += 1
    if named is not None and ref is not None and not _ran(ref, site) and site.startswith(named + "."):
        named = site  # the layer is never called: its weight is used by its parent's code
    if named == site:
        row["named"] += 1
    else:
        row["misses"].append(f"{what}: named {named}, fault in {site}")


def _weight_fault(name, mode, ref, work, row) -> None:
    model, args, kwargs = lowered(name, mode)
    site = F.weight_site(model)
    F.perturb_weight(model, site)
    out = work / f"w_{mode}"
    forward_dump(out, model, args, kwargs)
    rp = replay_model(model, ref, args=args, kwargs=kwargs)
    _judge(
        row,
        f"weight {mode}",
        compare_dumps(ref, out),
        site,
        rp.culprit and rp.culprit["name"],
        ref,
        replayed=rp,
    )


def _own_code_fault(name, mode, ref, work, row) -> None:
    model, args, kwargs = lowered(name, mode)
    site = F.own_code_site(model)
    if site is None:
        return
    out = work / f"o_{mode}"
    nth = _effective(name, site)
    if nth is None:
        row["no_effect"] = row.get("no_effect", 0) + 1
        return
    with F.own_code_fault(model, site, nth=nth):
        forward_dump(out, model, args, kwargs)
        rp = replay_model(model, ref, args=args, kwargs=kwargs)
    _judge(
        row,
        f"own code {mode} ({site})",
        compare_dumps(ref, out),
        site,
        rp.culprit and rp.culprit["name"],
        replayed=rp,
    )


def _effective(name: str, site: str) -> int | None:
    """The first own-code call (2nd, 3rd, 4th, 1st) whose fault changes the model's output
    by more than 1e-3 relative, or None."""
    model, args, kwargs = build(name)
    with torch.no_grad():
        clean = Z.main_output(model(*args, **kwargs))
        for nth in (1, 2, 3, 0):
            with F.own_code_fault(model, site, nth=nth):
                bad = Z.main_output(model(*args, **kwargs))
            if float((bad - clean).norm() / clean.norm().clamp_min(1e-30)) > 1e-3:
                return nth
    return None


def _grads(name, work, row) -> None:
    ref = work / "g_ref"
    train_dump(ref, *build(name))
    for mode in ("bf16", "fp16"):
        out = work / f"g_{mode}"
        train_dump(out, *lowered(name, mode))
        res = compare_dumps(ref, out)
        row["honest"] += 1
        _honest(row, f"grads {mode}", res)
        if mode == "bf16":
            honest = res
    for what, inject, size, kind in (
        ("backward x1.25", F.scale_grad_input, 0.25, "backward.grad_input"),
        ("weight grad x0.5", F.scale_weight_grad, 0.5, "backward.parameter"),
    ):
        model, args, kwargs = lowered(name, "bf16")
        # a module backward hook fires only on a layer that runs as a module
        site = F.backward_site(model, args, kwargs) if kind == "backward.grad_input" else F.weight_site(model)
        if site is None:
            row["unseen"].append(f"{what} bf16: no layer runs as a module")
            continue
        out = work / "g_fault"
        train_dump(out, model, args, kwargs, hooks=[inject(model, site)])
        res = compare_dumps(ref, out)
        first = res.first_divergence["name"] if res.first_divergence else None
        # a tied parameter's gradient sums every use: the report names every holder
        tied = [t.rpartition(".")[0] for t in (res.first_divergence or {}).get("tied", ())]
        if site in tied:
            row["tied"] = row.get("tied", 0) + 1
            first = site
        _judge(row, f"{what} bf16", res, site, first, unseen=_hidden(honest, site, kind, size))


def _hidden(honest, site: str, kind: str, size: float) -> str | None:
    """Why a gradient fault of relative ``size`` at ``site`` cannot show: the honest bf16
    step already errs that much there, or the gradients there are subnormal."""
    for e in honest.entries:
        if (e["name"], e["kind"], e["index"]) == (site, kind, 0):
            if "smallest normal" in e["reason"]:
                return "the site's gradients are below the smallest normal"
            if (e.get("rel_err") or 0.0) >= size:
                return f"the honest bf16 step already errs {e['rel_err']:.2g} there (fault {size:g})"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join((*H.MODELS, *Z.ZOO)))
    ap.add_argument("--timm", action="store_true", help="add the timm models (torchvision)")
    a = ap.parse_args()
    if a.timm:
        a.models += "," + ",".join(T.ZOO)
    torch.set_num_threads(1)
    rows, t0 = [], time.perf_counter()
    for name in a.models.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            row = sweep(name, Path(tmp))
            rows.append(row)
        ok = row["honest"] - len(row["alarms"]) - len(row["findings"])
        print(
            f"{name:13} honest {ok}/{row['honest']} pass"
            + (f" ({len(row['findings'])} true finding)" if row["findings"] else "")
            + f", faults caught {row['caught']}/{row['faults']}, named {row['named']}"
            f"  ({time.perf_counter() - t:.1f} s)",
            flush=True,
        )
        for label, key in (
            ("FALSE ALARM", "alarms"),
            ("FINDING", "findings"),
            ("NOT COUNTED", "unseen"),
            ("MISS", "misses"),
        ):
            for line in row[key]:
                print(f"    {label} {line}"[:300])
        if row.get("by_replay"):
            print(f"    ({row['by_replay']} fault(s) below compare's bands, caught by replay)")
        if row.get("tied"):
            print(f"    ({row['tied']} gradient fault(s) named among the holders of a tied parameter)")
        if row.get("no_effect"):
            print("    (own-code fault without effect on the output: not counted)")
    honest = sum(r["honest"] for r in rows)
    alarms = sum(len(r["alarms"]) for r in rows)
    findings = sum(len(r["findings"]) for r in rows)
    faults = sum(r["faults"] for r in rows)
    unseen = sum(len(r["unseen"]) for r in rows)
    print(
        f"\n{len(rows)} models, {time.perf_counter() - t0:.0f} s (torch {torch.__version__}): "
        f"false alarms {alarms} of {honest} honest runs ({findings} true findings); faults "
        f"caught {sum(r['caught'] for r in rows)} of {faults} ({sum(r.get('by_replay', 0) for r in rows)} by "
        "replay only), at the faulty module "
        f"{sum(r['named'] for r in rows)} ({sum(r.get('tied', 0) for r in rows)} of them named among a tied "
        f"parameter's holders; {unseen} faults that cannot show not counted)"
    )


if __name__ == "__main__":
    main()
