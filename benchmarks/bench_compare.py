"""`migrate compare` of this working tree against another revision, side by side in one run:
wall time of the whole process and the same verdicts.

    python benchmarks/bench_compare.py [--base REV] [--reps 3] [--pairs DIR]

The base revision is exported with ``git archive`` into a temporary folder (no worktree)
and run with ``PYTHONPATH`` pointing at it, so both sides use this interpreter and its
packages. The model is bench_precision.py's GPT-style decoder (6 blocks, d=512, about
27 M parameters): a reference and a target with 8 rows of one MLP weight scaled by 1.01,
dumped once with this tree's `migrate dump` code (the dump format is the same). Each
compare is a fresh process (`python -m migrate compare REF TGT --format json -o F`),
alternating base / tree ``--reps`` times; the minimum of each is kept (robust to load on
a shared machine) and the ratio printed.

``--pairs DIR`` also compares every dump under DIR/<model>/ against that model's
reference (``ref``; ``g_ref`` for training-step dumps named ``g_*``) with both sides,
and lists every entry whose status differs and the largest relative change of a metric.
Exit 1 when a verdict differs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent


def export(rev: str, into: Path) -> Path:
    """``rev``'s tree in ``into/base`` (git archive: nothing is checked out in the repo)."""
    base = into / "base"
    base.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    return base


def make_dumps(work: Path, layers: int, batch: int, seq: int) -> tuple[Path, Path]:
    code = f"""
import sys, torch
sys.path[:0] = [{str(REPO)!r}, {str(HERE)!r}]
from bench_precision import build
from migrate.precision.dumper import dump
torch.set_num_threads(2)
for variant in ("ref", "tgt"):
    model, ids = build(variant, {layers}, {batch}, {seq})
    with torch.no_grad(), dump(model, {str(work)!r} + "/" + variant, inputs=True, params=True,
                               exclude=["<root>"]):
        model(ids)
"""
    subprocess.run([sys.executable, "-c", code], check=True)
    return work / "ref", work / "tgt"


def timed_compare(code_dir: Path, ref: Path, tgt: Path, out: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(code_dir)}
    t0 = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "migrate", "compare", str(ref), str(tgt), "--format", "json", "-o", str(out)],
        cwd=code_dir,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if run.returncode not in (0, 1):
        raise SystemExit(f"compare failed in {code_dir} ({run.returncode}): {run.stderr[-2000:]}")
    return wall


_CMP = """
import json, sys
from pathlib import Path
from migrate.precision.compare import compare_dumps
root, out = Path(sys.argv[1]), {}
for mdir in sorted(p for p in root.iterdir() if p.is_dir()):
    for d in sorted(p for p in mdir.iterdir() if p.is_dir() and p.name not in ("ref", "g_ref")):
        r = compare_dumps(mdir / ("g_ref" if d.name.startswith("g_") else "ref"), d)
        first = r.first_divergence or {}
        out[f"{mdir.name}/{d.name}"] = {"passed": bool(r), "first": [first.get(k) for k in
                                        ("name", "call", "kind", "index")],
                                        "entries": r.entries}
json.dump(out, sys.stdout, default=str)
"""


def verdicts(code_dir: Path, pairs: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code_dir)}
    run = subprocess.run(
        [sys.executable, "-c", _CMP, str(pairs)],
        cwd=code_dir,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(run.stdout)


def _rel(a: object, b: object) -> float:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or isinstance(a, bool) or a == b:
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def diff_verdicts(base: dict, tree: dict) -> tuple[list[str], tuple[float, str], int]:
    """(differences in verdicts, (largest relative metric change, where), entries
    compared)."""
    diffs, worst, n = [], (0.0, ""), 0
    for key in sorted(set(base) | set(tree)):
        a, b = base.get(key), tree.get(key)
        if a is None or b is None:
            diffs.append(f"{key}: only on one side")
            continue
        if (a["passed"], a["first"]) != (b["passed"], b["first"]):
            diffs.append(
                f"{key}: passed {a['passed']} -> {b['passed']}, first divergence {a['first']} -> {b['first']}"
            )
        for ea, eb in zip(a["entries"], b["entries"], strict=True):
            n += 1
            where = f"{key} {ea['name']}#{ea['call']} {ea['kind']}[{ea['index']}]"
            if ea.get("status") != eb.get("status"):
                diffs.append(
                    f"{where}: {ea.get('status')} -> {eb.get('status')} "
                    f"({ea.get('reason')} | {eb.get('reason')})"
                )
            for field in sorted(set(ea) & set(eb)):
                change = _rel(ea[field], eb[field])
                if change > worst[0]:
                    worst = (change, f"{where} {field}: {ea[field]!r} -> {eb[field]!r}")
    return diffs, worst, n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="HEAD", help="revision to compare with (default HEAD)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--pairs", type=Path, help="folder of <model>/{ref,g_ref,...} dumps")
    a = ap.parse_args()
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = export(a.base, work)
        ref, tgt = make_dumps(work, a.layers, a.batch, a.seq)
        times: dict[str, list[float]] = {"base": [], "tree": []}
        for i in range(a.reps):
            order = [("base", base), ("tree", REPO)]
            for side, code in order if i % 2 == 0 else order[::-1]:
                times[side].append(timed_compare(code, ref, tgt, work / f"{side}.json"))
        same = diff_verdicts(
            *(
                {
                    "gpt": {
                        "passed": doc["gate"]["passed"],
                        "first": [
                            (doc.get("first_divergence") or {}).get(k)
                            for k in ("name", "call", "kind", "index")
                        ],
                        "entries": doc["entries"],
                    }
                }
                for doc in (json.loads((work / f"{s}.json").read_text()) for s in ("base", "tree"))
            )
        )
        b, t = min(times["base"]), min(times["tree"])
        print(
            f"compare of a {a.layers}-block GPT dump (one process each, best of {a.reps}): "
            f"{a.base} {b:.2f} s, working tree {t:.2f} s: {b / t:.2f}x"
        )
        print(
            f"  runs: {a.base} {[round(x, 2) for x in times['base']]}, "
            f"tree {[round(x, 2) for x in times['tree']]}"
        )
        print(
            f"  {same[2]} entries, verdict differences {len(same[0])}, largest relative "
            f"metric change {same[1][0]:.2g} ({same[1][1]})"
        )
        for line in same[0][:20]:
            print("   ", line)
        status |= bool(same[0])
        if a.pairs:
            t0 = time.perf_counter()
            tb = verdicts(base, a.pairs)
            t1 = time.perf_counter()
            tt = verdicts(REPO, a.pairs)
            t2 = time.perf_counter()
            diffs, worst, n = diff_verdicts(tb, tt)
            fails = sum(not v["passed"] for v in tt.values())
            print(
                f"{len(tt)} dump pairs under {a.pairs} ({fails} failing), {n} entries: "
                f"verdict differences {len(diffs)}, largest relative metric change "
                f"{worst[0]:.2g} ({worst[1]}); all compares in one process: {a.base} {t1 - t0:.1f} s, "
                f"tree {t2 - t1:.1f} s"
            )
            for line in diffs[:40]:
                print("   ", line)
            status |= bool(diffs)
    return status


if __name__ == "__main__":
    sys.exit(main())
