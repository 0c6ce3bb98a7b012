"""Robustness benchmarks (issues 13 and 18), measured side by side in one run.

* Memory: peak RSS of `migrate scan` on N findings written as one long line, against the
  same N findings one per line (the ratio should stay near 1: RSS does not grow with the
  length of a line, snippets are windows).
* Time: `migrate apply` against `migrate scan` on a file with 10 000 findings, and on 1 000
  findings on one line (both cold: --no-cache). Target: apply <= 3x scan.
* Scaling (issue 18): scan and apply time for 1k, 10k and 100k findings in one file, one per
  line and all on one line; each step is 10x the findings, so a linear tool shows a growth
  of about 10 (a quadratic one 100). ``--baseline REV`` runs the sizes up to 10k with that
  revision too, side by side (a temporary git worktree).

* Leftovers of issue 18, each at sizes 10x apart (deep: 2x) so a linear cost shows a
  growth of about 10 (2), with ``--baseline REV`` timed side by side at the smaller sizes:
  ``annotate``: `apply --annotate` on N lines each holding a manual finding and a fix;
  ``deep``: `scan` of one file under D nested folders, with and without a .gitignore in
  each (scan/discover.py MAX_DEPTH caps D); ``doctor``: `doctor --log` on N error codes,
  one per line and all on one line.
* Growth (issue 32): CPU seconds of `migrate apply` on one file of 1k and 8k findings
  (``x = torch.cuda.current_device()`` / ``t = t.cuda()``, in one function and at module
  level) and their ratio; target: linear, 8k <= 10x 1k.
* RSS per MB (issue 32): peak RSS of `migrate scan` on one 2.6 MB file of ~138k findings
  (``x = torch.cuda.synchronize()`` and kin), JSON and text reports, per MB of input;
  ``--baseline REV`` beside it (before/after).

    python benchmarks/bench_robust.py [--findings 100000] [--sizes 1000,10000,100000]
                                      [--baseline REV] [--only rss|scaling|annotate|deep|doctor|growth]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEAD = "import torch\nx = torch.zeros(1)\n"


def peak_rss(*args: str, repo: Path = REPO, fmt: str = "json") -> int:
    """Peak RSS (MB) of one child, measured alone (ru_maxrss of RUSAGE_CHILDREN is a max
    over all children, so each measurement runs in its own wrapper process)."""
    code = (
        "import resource,subprocess,sys;"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    env = {**os.environ, "PYTHONPATH": str(repo)}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            sys.executable,
            "-m",
            "migrate",
            *args,
            "--no-cache",
            "--format",
            fmt,
        ],
        env=env,
        cwd=repo,  # `python -m` puts the working folder first on sys.path: the one measured
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip()) // 1024


def timed(*args: str, repo: Path = REPO, no_cache: bool = True) -> float:
    """Wall time of one cold run of ``repo``'s migrate (run from a neutral folder: `python
    -m` puts the current folder first on sys.path, before PYTHONPATH)."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    start = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "migrate", *args, *(["--no-cache"] if no_cache else [])],
        env=env,
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    if r.returncode not in (0, 1):
        raise SystemExit(f"migrate {' '.join(args)} failed: {r.stderr[-500:]}")
    return time.perf_counter() - start


def cpu_timed(*args: str) -> float:
    """CPU seconds (user + system) of one cold run of this checkout's migrate."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    timed(*args)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def growth(work: Path, sizes: tuple[int, int] = (1000, 8000)) -> None:
    """`apply` CPU time at two numbers of findings in one file, and the ratio."""
    small, big = sizes
    for layout, indent in (("in one function", "    "), ("at module level", "")):
        seconds = []
        for n in sizes:
            lines = [
                f"{indent}x{i} = torch.cuda.current_device()" if i % 2 else f"{indent}t{i} = t.cuda()"
                for i in range(n)
            ]
            src = work / f"growth_{n}_{len(indent)}.py"
            src.write_text("import torch\n\n\n" + ("def f(t):\n" if indent else "") + "\n".join(lines) + "\n")
            seconds.append(cpu_timed("apply", str(src)))
        target = big / small * 1.25
        print(
            f"growth  apply, one file {layout}: {small} findings {seconds[0]:.2f} s CPU, {big} findings "
            f"{seconds[1]:.2f} s CPU, ratio {seconds[1] / seconds[0]:.1f} (target <= {target:.0f})"
        )


def memory(work: Path, n: int) -> None:
    one_line = work / "one_line.py"
    one_line.write_text(HEAD + "x.cuda();" * n + "\n")
    many = work / "many_lines.py"
    many.write_text(HEAD + "x.cuda()\n" * n)
    a, b = peak_rss("scan", str(one_line)), peak_rss("scan", str(many))
    print(
        f"memory  scan, {n} findings: one line of {one_line.stat().st_size // 1024} KB "
        f"{a} MB, one per line {b} MB, ratio {a / b:.2f}"
    )


RSS_LINES = (  # x = torch.cuda.synchronize() and its kin: 1.25 findings per 16 bytes
    "x = torch.cuda.synchronize()\n",
    "y = a.cuda()\n",
    "z = b.cuda(); w = c.cuda()\n",
    "torch.cuda.empty_cache()\n",
)


def rss_per_mb(work: Path, mb: float, baseline: Path | None) -> None:
    """Peak RSS of `migrate scan` per MB of input on one file of ``mb`` MB (2.6 MB: ~138k
    findings), JSON and text reports; with ``--baseline REV`` that revision beside it."""
    src = work / "rss.py"
    lines, size, i = ["import torch\n"], 13, 0
    while size < mb * 1e6:
        lines.append(RSS_LINES[i % len(RSS_LINES)])
        size += len(lines[-1])
        i += 1
    src.write_text("".join(lines))
    size_mb = src.stat().st_size / 1e6
    print(f"rss     scan of one {size_mb:.1f} MB file ({i * 5 // 4} findings): peak RSS, and per MB of input")
    for fmt in ("json", "text"):
        row = []
        for label, repo in (("now", REPO), ("baseline", baseline)):
            if repo is not None:
                rss = peak_rss("scan", str(src), repo=repo, fmt=fmt)
                row.append(f"{label} {rss} MB ({rss / size_mb:.0f} MB per MB)")
        print(f"  --format {fmt:4s} " + "; ".join(row))


def apply_vs_scan(work: Path, name: str, text: str) -> None:
    src = work / f"{name}.py"
    src.write_text(text)
    scan = timed("scan", str(src))
    target = work / f"{name}_apply.py"
    shutil.copy(src, target)
    apply = timed("apply", str(target))
    print(f"time    {name}: scan {scan:.2f} s, apply {apply:.2f} s, ratio {apply / scan:.2f} (target <= 3)")


def scaling(work: Path, sizes: list[int], baseline: Path | None, label: str) -> None:
    print(
        f"scaling: scan / apply seconds per file; growth = time / time at the size before "
        f"(10x the findings: ~10 is linear){label}"
    )
    for layout, sep in (("one per line", "\n"), ("one line", ";")):
        before: dict[str, float] = {}
        for n in sizes:
            src = work / f"scale_{n}_{len(sep)}.py"
            src.write_text(HEAD + sep.join(["x.cuda()"] * n) + "\n")
            row = []
            for name, repo in (("this", REPO), ("baseline", baseline)):
                if repo is None or (name == "baseline" and n > 10_000):
                    continue
                scan = timed("scan", str(src), repo=repo)
                target = work / f"apply_{name}.py"
                shutil.copy(src, target)
                apply = timed("apply", str(target), repo=repo)
                grow = (
                    f" (growth {scan / before[name + 's']:.1f} / {apply / before[name + 'a']:.1f})"
                    if name + "s" in before
                    else ""
                )
                before[name + "s"], before[name + "a"] = scan, apply
                row.append(f"{name}: scan {scan:6.2f} s, apply {apply:6.2f} s{grow}")
            print(f"  {layout:13s} {n:>7} findings  " + "; ".join(row))


def _side_by_side(label: str, sizes: list[int], make, run, baseline: Path | None, base_max: int) -> None:
    """One row per size: this checkout's time (and the baseline's up to ``base_max``), with
    the growth from the size before."""
    before: dict[str, float] = {}
    for n in sizes:
        target = make(n)
        row = []
        for name, repo in (("this", REPO), ("baseline", baseline)):
            if repo is None or (name == "baseline" and n > base_max):
                continue
            seconds = run(target, repo)
            grow = f" (growth {seconds / before[name]:.1f})" if name in before else ""
            before[name] = seconds
            row.append(f"{name}: {seconds:7.2f} s{grow}")
        print(f"  {label:28s} {n:>7}  " + "; ".join(row))


def annotate_bench(work: Path, sizes: list[int], baseline: Path | None) -> None:
    print("annotate: apply --annotate, N lines of a manual finding and a fix (growth ~10 is linear)")

    def make(n: int) -> Path:
        src = work / f"annotate_{n}.py"
        src.write_text("import torch\n" + "torch.backends.cudnn.benchmark = True; x.cuda()\n" * n)
        return src

    def run(src: Path, repo: Path) -> float:
        target = work / "annotate_apply.py"
        shutil.copy(src, target)
        return timed("apply", str(target), "--annotate", repo=repo)

    _side_by_side("lines", sizes, make, run, baseline, 2000)


def deep_bench(work: Path, depths: list[int], baseline: Path | None) -> None:
    print("deep: scan of one file under D nested folders (growth ~2 per doubling is linear)")
    for gitignore in (False, True):

        def make(depth: int, gitignore: bool = gitignore) -> Path:
            top = work / f"deep_{depth}_{int(gitignore)}"
            folder = top
            for _ in range(depth):
                folder = folder / "d"
                folder.mkdir(parents=True, exist_ok=True)
                if gitignore:
                    (folder / ".gitignore").write_text("*.txt\n!keep.py\nbuild/\n")
            (folder / "a.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
            return top

        label = "folders" + (", a .gitignore in each" if gitignore else "")
        _side_by_side(
            label, depths, make, lambda top, repo: timed("scan", str(top), repo=repo), baseline, 10**6
        )


def doctor_bench(work: Path, sizes: list[int], baseline: Path | None) -> None:
    print("doctor: doctor --log on N error codes (growth ~10 is linear)")
    layouts = {
        "one per line": lambda i: f"[ERROR] E{'EZLHK'[i % 5]}{i % 10000:04d} ret=507011 aclError failed: x\n",
        "all on one line": lambda i: f"EZ{i % 10000:04d} ",
    }
    for label, line in layouts.items():

        def make(n: int, line=line, label=label) -> Path:
            log = work / f"log_{n}_{len(label)}.txt"
            log.write_text("".join(line(i) for i in range(n)) + "\n")
            return log

        def run(log: Path, repo: Path) -> float:
            return timed("doctor", "--log", str(log), repo=repo, no_cache=False)

        _side_by_side(label, sizes, make, run, baseline, 80_000)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--findings", type=int, default=100_000)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--baseline", help="a git revision to time side by side (sizes <= 10k)")
    ap.add_argument(
        "--only", choices=("memory", "rss", "time", "growth", "scaling", "annotate", "deep", "doctor")
    )
    ap.add_argument("--rss-mb", type=float, default=2.6, help="size of the rss row's file, MB")
    ap.add_argument("--annotate-sizes", default="1000,10000")
    ap.add_argument("--depths", default="32,64,128")
    ap.add_argument("--log-sizes", default="8000,80000,800000")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.only in (None, "memory"):
            memory(work, args.findings)
        if args.only in (None, "time"):
            apply_vs_scan(work, "10000_findings", HEAD + "x.cuda()\n" * 10_000)
            apply_vs_scan(work, "1000_on_one_line", HEAD + "x.cuda();" * 1000 + "\n")
        if args.only in (None, "growth"):
            growth(work)
        baseline = None
        if args.baseline and args.only not in ("memory", "time", "growth"):
            baseline = work / "baseline"
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(baseline), args.baseline],
                check=True,
            )
        try:
            if args.only in (None, "rss"):
                rss_per_mb(work, args.rss_mb, baseline)
            if args.only in (None, "scaling"):
                scaling(work, sizes, baseline, f"; baseline {args.baseline}" if args.baseline else "")
            if args.only in (None, "annotate"):
                annotate_bench(work, [int(x) for x in args.annotate_sizes.split(",")], baseline)
            if args.only in (None, "deep"):
                deep_bench(work, [int(x) for x in args.depths.split(",")], baseline)
            if args.only in (None, "doctor"):
                doctor_bench(work, [int(x) for x in args.log_sizes.split(",")], baseline)
        finally:
            if baseline is not None:
                subprocess.run(
                    ["git", "-C", str(REPO), "worktree", "remove", "--force", str(baseline)], check=False
                )


if __name__ == "__main__":
    main()
