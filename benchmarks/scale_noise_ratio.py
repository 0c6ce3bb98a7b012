"""How far an honest forward wrong factor (scale_err) gets from what chance gives it
(scale_noise), against a wrong norm epsilon: the measurement behind the forward
``scale_noise_k`` and ``scale_err_max`` of thresholds.yaml.

For every architecture of the precision sweep (transformers tiny configs, random init, no
downloads): an fp32 reference, honest forward runs (another fp32 device, emulated HF32,
bf16, fp16), honest training steps (bf16, fp16) and replays (bf16, fp16); then the middle
norm's epsilon set to 0.1 (faults.wrong_eps) in fp32, bf16 and fp16 targets. Prints, per
precision class, the largest honest ratio scale_err / scale_noise among the entries the
gate judges (error above the class's smallest normal, scale_err above the class's
``scale_err_max``), by what a gate judging them above 1 x scale_noise makes of them:
carried (explained by what they were computed from), after an MoE router's decision
flipped (warned), or fresh (an alarm at k = 1) - each eps fault's
ratio, and the gate's verdict: false alarms, faults failing at the norm. Run:
PYTHONPATH=. python benchmarks/scale_noise_ratio.py [--models a,b] (about a minute for
the 21 models on 2 shared cores).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "precision"), str(REPO / "benchmarks")]

import faults as F  # noqa: E402
import hf_models as H  # noqa: E402
import hf_zoo as Z  # noqa: E402
import torch  # noqa: E402
from precision_sweep import build, forward_dump, lowered, train_dump  # noqa: E402

from migrate.precision.classes import registry  # noqa: E402
from migrate.precision.compare import compare_dumps  # noqa: E402
from migrate.precision.replay import replay_model  # noqa: E402
from migrate.precision.thresholds import load_gate  # noqa: E402

GATE = load_gate()


def _tiny(cls: str | None) -> float:
    """The class's smallest normal (0 for exact tensors)."""
    return registry().smallest_normal(cls) or 0.0


MODELS = (*H.MODELS, "mixtral", *Z.ZOO)


def judged(e: dict) -> float | None:
    """The honest ratio of a forward entry the scale_err gate judges, else None."""
    cls = e.get("class") or ""
    floor = (GATE.dtypes.get(cls) or {}).get("scale_err_max")
    se, sn = e.get("scale_err"), e.get("scale_noise")
    if e["kind"].startswith("backward") or floor is None or se is None or not sn or se <= floor:
        return None
    if (e.get("rmse") or 0.0) <= _tiny(cls):
        return None
    return se / sn


def _chance_gate():
    """The default gate with every forward scale_err judged above 1 x its noise: labels
    each entry the rule could judge as carried, flipped or fresh (a would-be alarm)."""
    gate = load_gate()
    for th in gate.dtypes.values():
        if th.get("scale_noise_k") is not None:
            th["scale_noise_k"] = 1.0
    return gate


CHANCE = _chance_gate()


def _runs(name: str, work: Path, alarms: list) -> list[tuple[str, list, list]]:
    """(run, entries under the default gate, entries under CHANCE) of every honest run."""
    ref = work / "ref"
    forward_dump(ref, *build(name), inputs=True)
    pairs = []
    for mode in ("other", "hf32", "bf16", "fp16"):
        forward_dump(work / mode, *lowered(name, mode), mode=mode)
        pairs.append((mode, ref, work / mode))
    train_dump(work / "tref", *build(name))
    for mode in ("bf16", "fp16"):
        train_dump(work / f"t{mode}", *lowered(name, mode))
        pairs.append((f"train-{mode}", work / "tref", work / f"t{mode}"))
    out = [
        (run, compare_dumps(r, t).entries, compare_dumps(r, t, gate=CHANCE).entries) for run, r, t in pairs
    ]
    for mode in ("bf16", "fp16"):
        got = []
        for gate in (GATE, CHANCE):
            model, args, kwargs = lowered(name, mode)
            rp = replay_model(model, ref, gate=gate, args=args, kwargs=kwargs)
            got.append([e for e in rp.entries if e.get("replayed")])
            if gate is GATE and rp.culprit:
                alarms.append(f"{name} replay {mode}: culprit {rp.culprit['name']}")
        out.append((f"replay-{mode}", *got))
    return out


def honest(name: str, work: Path, stats: dict, alarms: list) -> None:
    for run, entries, chance in _runs(name, work, alarms):
        for e, c in zip(entries, chance, strict=True):
            ratio = judged(c)
            if ratio is None:
                continue
            why = (
                "flipped" if "flipped" in c["reason"] else "carried" if "carried" in c["reason"] else "fresh"
            )
            where = f"{name} {run} {e['name']} scale_err {e['scale_err']:.3g}"
            stats.setdefault((e["class"], why), []).append((ratio, where))
            if e["status"] == "fail" and "scale_noise" in e["reason"]:
                alarms.append(f"{name} {run}: {e['name']} {e['reason']}")


def eps_fault(name: str, work: Path, rows: list) -> None:
    model, _, _ = build(name)
    site = F.norm_site(model)
    if site is None:
        return
    for mode in ("fp32", "bf16", "fp16"):
        faulty, args, kwargs = lowered(name, mode)
        F.wrong_eps(faulty, site, 0.1)
        forward_dump(work / f"eps_{mode}", faulty, args, kwargs)
        res = compare_dumps(work / "ref", work / f"eps_{mode}")
        e = next(e for e in res.entries if e["name"] == site and e["kind"] == "forward.output")
        first = res.first_divergence
        shows = (e.get("rmse") or 0.0) > _tiny(e.get("class"))
        ratio = e["scale_err"] / e["scale_noise"] if e.get("scale_noise") else float("inf")
        rows.append(
            {
                "what": f"{name} {mode} {site}",
                "ratio": ratio,
                "scale_err": e["scale_err"],
                "shows": shows,
                "at_site": not res and bool(first) and first["name"] == site,
            }
        )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--top", type=int, default=3, help="honest entries shown per class")
    opts = ap.parse_args()
    torch.set_num_threads(1)
    stats: dict = {}
    alarms: list[str] = []
    rows: list[dict] = []
    for name in opts.models.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            honest(name, Path(tmp), stats, alarms)
            eps_fault(name, Path(tmp), rows)
    print("largest honest scale_err / scale_noise among judged entries (above scale_err_max):")
    for (cls, why), found in sorted(stats.items()):
        found.sort(reverse=True)
        print(f"  {cls:<9} {why:<7} {len(found):4d} entries, largest:")
        for ratio, where in found[: opts.top]:
            print(f"      {ratio:6.2f}  {where}")
    print(f"false alarms: {len(alarms)}")
    for a in alarms:
        print(f"  {a}")
    shown = [r for r in rows if r["shows"]]
    caught = [r for r in shown if r["at_site"]]
    print(
        f"eps 0.1 faults: {len(rows)}, {len(shown)} above the smallest normal, {len(caught)} fail at the norm"
    )
    for r in rows:
        mark = "caught" if r["at_site"] else ("MISSED" if r["shows"] else "vanished")
        print(f"  {mark:<8} ratio {r['ratio']:6.2f} scale_err {r['scale_err']:.3g}  {r['what']}")
    return 1 if alarms else 0


if __name__ == "__main__":
    raise SystemExit(main())
