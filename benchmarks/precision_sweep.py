"""Honest and faulty precision runs on 20 real architectures (transformers tiny configs,
random init): the false alarms and misses of `compare`, `replay` and gradient checks.

For every model: an fp32 reference (with inputs), then
  honest forward runs - another fp32 device, emulated HF32, bf16, fp16 (compare; replay
  for bf16) - and honest training steps in bf16 and fp16 (gradients, the probe loss);
  faults, each in an fp32 and a bf16 target - 4 rows of a middle layer's weight x1.5
  (compare, replay), a functional call inside a middle block's own code x1.25 (compare,
  replay must name the block) - and in a bf16 training step: a 25% wrong backward into a
  middle layer, a weight gradient halved.
Prints one row per model and the tallies. Run: python benchmarks/precision_sweep.py
[--models a,b] (about 10 minutes for all on 2 shared cores).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "precision")]

import torch  # noqa: E402

import faults as F  # noqa: E402
import hf_models as H  # noqa: E402
import hf_zoo as Z  # noqa: E402
from migrate.precision.compare import compare_dumps  # noqa: E402
from migrate.precision.dumper import dump  # noqa: E402
from migrate.precision.replay import replay_model  # noqa: E402
from migrate.precision.runner import cast_model, move, probe_loss  # noqa: E402

LOW = {"bf16": torch.bfloat16, "fp16": torch.float16}


def build(name: str):
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


def failing(result) -> list[str]:
    return [f"{e['name']}:{e['kind']}:{e['reason']}" for e in result.entries
            if e["status"] == "fail"] + [w["reason"] for w in result.weights]


def sweep(name: str, work: Path) -> dict:
    row = {"model": name, "alarms": [], "misses": [], "caught": 0, "named": 0, "faults": 0,
           "honest": 0}
    ref = work / "ref"
    forward_dump(ref, *build(name), inputs=True)
    for mode in ("other", "hf32", "bf16", "fp16"):
        out = work / f"h_{mode}"
        forward_dump(out, *lowered(name, mode), mode=mode)
        res = compare_dumps(ref, out)
        row["honest"] += 1
        if not res:
            row["alarms"].append(f"compare {mode}: {failing(res)[:2]}")
    model, args, kwargs = lowered(name, "bf16")
    rp = replay_model(model, ref, args=args, kwargs=kwargs)
    row["honest"] += 1
    if not rp or rp.culprit:
        row["alarms"].append(f"replay bf16: {rp.culprit} {rp.inconclusive} {failing(rp)[:2]}")
    for mode in ("fp32", "bf16"):
        _weight_fault(name, mode, ref, work, row)
        _own_code_fault(name, mode, ref, work, row)
    _grads(name, work, row)
    return row


def _ran(ref: Path, site: str) -> bool:
    from migrate.precision.manifest import Dump

    return any(r["name"] == site for r in Dump(ref).records)


def _judge(row, what: str, result, site: str, named: str | None, ref: Path | None = None
           ) -> None:
    row["faults"] += 1
    if result:
        row["misses"].append(f"{what}: compare passed")
        return
    row["caught"] += 1
    if named is not None and ref is not None and not _ran(ref, site) and \
            site.startswith(named + "."):
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
    _judge(row, f"weight {mode}", compare_dumps(ref, out), site,
           rp.culprit and rp.culprit["name"], ref)


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
    _judge(row, f"own code {mode} ({site})", compare_dumps(ref, out), site,
           rp.culprit and rp.culprit["name"])


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
        if not res:
            row["alarms"].append(f"grads {mode}: {failing(res)[:2]}")
    for what, inject in (("backward x1.25", F.scale_grad_input),
                         ("weight grad x0.5", F.scale_weight_grad)):
        model, args, kwargs = lowered(name, "bf16")
        site = F.weight_site(model)
        out = work / "g_fault"
        train_dump(out, model, args, kwargs, hooks=[inject(model, site)])
        res = compare_dumps(ref, out)
        first = res.first_divergence["name"] if res.first_divergence else None
        _judge(row, f"{what} bf16", res, site, first)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join((*H.MODELS, *Z.ZOO)))
    a = ap.parse_args()
    torch.set_num_threads(1)
    rows, t0 = [], time.perf_counter()
    for name in a.models.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            row = sweep(name, Path(tmp))
            rows.append(row)
        print(f"{name:13} honest {row['honest'] - len(row['alarms'])}/{row['honest']} pass, "
              f"faults caught {row['caught']}/{row['faults']}, named {row['named']}"
              f"  ({time.perf_counter() - t:.1f} s)", flush=True)
        for line in row["alarms"]:
            print(f"    FALSE ALARM {line}"[:300])
        if row.get("no_effect"):
            print("    (own-code fault without effect on the output: not counted)")
        for line in row["misses"]:
            print(f"    MISS {line}"[:300])
    honest = sum(r["honest"] for r in rows)
    alarms = sum(len(r["alarms"]) for r in rows)
    faults = sum(r["faults"] for r in rows)
    print(f"\n{len(rows)} models, {time.perf_counter() - t0:.0f} s: false alarms {alarms} of "
          f"{honest} honest runs; faults caught {sum(r['caught'] for r in rows)} of {faults}, "
          f"at the faulty module {sum(r['named'] for r in rows)}")


if __name__ == "__main__":
    main()
