"""Robustness benchmarks (issue 13), measured side by side in one run.

* Memory: peak RSS of `migrate scan` on N findings written as one long line, against the
  same N findings one per line (the ratio should stay near 1: RSS does not grow with the
  length of a line, snippets are windows).
* Time: `migrate apply` against `migrate scan` on a file with 10 000 findings, and on 1 000
  findings on one line (both cold: --no-cache). Target: apply <= 3x scan.

    python benchmarks/bench_robust.py [--findings 100000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEAD = "import torch\nx = torch.zeros(1)\n"


def peak_rss(*args: str) -> int:
    """Peak RSS (MB) of one child, measured alone (ru_maxrss of RUSAGE_CHILDREN is a max
    over all children, so each measurement runs in its own wrapper process)."""
    code = ("import resource,subprocess,sys;"
            "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL);"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "migrate", *args,
                          "--no-cache", "--format", "json"], env=env, capture_output=True,
                         text=True, check=True)
    return int(out.stdout.strip()) // 1024


def timed(*args: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "migrate", *args, "--no-cache"], env=env,
                       capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise SystemExit(f"migrate {' '.join(args)} failed: {r.stderr[-500:]}")
    return time.perf_counter() - start


def memory(work: Path, n: int) -> None:
    one_line = work / "one_line.py"
    one_line.write_text(HEAD + "x.cuda();" * n + "\n")
    many = work / "many_lines.py"
    many.write_text(HEAD + "x.cuda()\n" * n)
    a, b = peak_rss("scan", str(one_line)), peak_rss("scan", str(many))
    print(f"memory  scan, {n} findings: one line of {one_line.stat().st_size // 1024} KB "
          f"{a} MB, one per line {b} MB, ratio {a / b:.2f}")


def apply_vs_scan(work: Path, name: str, text: str) -> None:
    src = work / f"{name}.py"
    src.write_text(text)
    scan = timed("scan", str(src))
    target = work / f"{name}_apply.py"
    shutil.copy(src, target)
    apply = timed("apply", str(target))
    print(f"time    {name}: scan {scan:.2f} s, apply {apply:.2f} s, ratio {apply / scan:.2f} "
          "(target <= 3)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--findings", type=int, default=100_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        memory(work, args.findings)
        apply_vs_scan(work, "10000_findings", HEAD + "x.cuda()\n" * 10_000)
        apply_vs_scan(work, "1000_on_one_line", HEAD + "x.cuda();" * 1000 + "\n")


if __name__ == "__main__":
    main()
