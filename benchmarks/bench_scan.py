"""Benchmark `migrate scan` against ruff on real projects, measured side by side.

For each project sdist (downloaded once with pip into benchmarks/.work/sdists and
extracted into benchmarks/.work/trees) it times, in the same run:

* ruff: ``ruff check --select E,F,UP --no-cache --exit-zero TREE``;
* migrate cold: ``migrate scan TREE --format json -o OUT --exit-zero`` with
  ``MIGRATE_CACHE_DIR`` set to a fresh, empty folder;
* migrate warm: the same command again, same cache folder (an unchanged tree: the run memo
  replays the report);
* migrate edited: the same again after one file's mtime moved (the memo misses, the scan
  cache holds every file: the warm path of an edit-and-rescan loop; reported, no target);

each --repeat times (default 3), keeping the best time of each (the machine may be busy).

It prints wall times, the ratios cold/ruff and warm/ruff, the peak memory of the migrate
run (the larger of: the process tree's summed RSS sampled every 0.1 s, and the largest
single process's max RSS from wait4), and the file/finding counts from the JSON report
(written to a temp file rather than /dev/null so they can be read). The targets on
transformers: cold <= 3x ruff, warm <= 0.3x ruff, peak RSS < 1 GB. Exit 0 if all pass,
1 if one fails, 2 if `migrate scan` is unavailable or fails.

    python benchmarks/bench_scan.py [--projects transformers,timm] [--repeat 3]
        [--migrate-cmd "migrate"] [-- extra scan args, e.g. --jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "benchmarks" / ".work"
PROJECTS = {"transformers": "5.23.0", "deepspeed": "0.19.8", "timm": "1.0.31"}
TARGET = "transformers"
COLD_MAX, WARM_MAX, RSS_MAX_MB = 3.0, 0.3, 1024.0  # issue 20


def fetch(name: str, version: str) -> Path:
    """The sdist, downloaded once: pip download --no-deps --no-binary :all:."""
    dest = WORK / "sdists"
    found = sorted(dest.glob(f"{name}-{version}.tar.gz")) if dest.is_dir() else []
    if not found:
        dest.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"{name}=={version}",
                "-d",
                str(dest),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        found = sorted(dest.glob(f"{name}-{version}.tar.gz"))
    if not found:
        sys.exit(f"bench: pip did not produce {name}-{version}.tar.gz in {dest}")
    return found[0]


def extract(sdist: Path) -> Path:
    tree = WORK / "trees" / sdist.name.removesuffix(".tar.gz")
    marker = tree / ".extracted"
    if not marker.exists():
        shutil.rmtree(tree, ignore_errors=True)
        with tarfile.open(sdist) as tar:
            tar.extractall(tree.parent, filter="data")
        marker.touch()
    return tree


@dataclass
class Run:
    seconds: float
    max_rss_mb: float  # largest single process (wait4 ru_maxrss)
    tree_rss_mb: float  # peak of the summed RSS of the process and its children
    returncode: int
    stderr: str

    @property
    def peak_mb(self) -> float:
        return max(self.max_rss_mb, self.tree_rss_mb)


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(x) for x in fh.read().split()]
    except OSError:
        pass
    return out


def _tree_rss(pid: int) -> int:
    """Summed resident pages of pid and its descendants, in bytes (0 if unreadable)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as fh:
                total += int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
        todo += _children(p)
    return total


def run(cmd: list[str], env: dict[str, str] | None = None) -> Run:
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.1):
                peak[0] = max(peak[0], _tree_rss(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    return Run(seconds, usage.ru_maxrss / 1024, peak[0] / 2**20, proc.returncode, stderr)


def ruff_exe() -> str:
    local = Path(sys.executable).parent / "ruff"
    exe = str(local) if local.exists() else shutil.which("ruff")
    if not exe:
        sys.exit("bench: ruff not found (pip install ruff)")
    return exe


def migrate_base(override: str | None) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    if override:
        return shlex.split(override), env
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return [sys.executable, "-m", "migrate"], env


def time_ruff(tree: Path, repeat: int) -> list[Run]:
    ruff = [ruff_exe(), "check", "--select", "E,F,UP", "--no-cache", "--exit-zero", str(tree)]
    return [run(ruff) for _ in range(repeat)]


def scan_available(override: str | None) -> bool:
    base, env = migrate_base(override)
    proc = subprocess.run([*base, "scan", "--help"], env=env, capture_output=True, text=True)
    return proc.returncode == 0 and "--format" in proc.stdout


def bench_tree(tree: Path, args: argparse.Namespace) -> dict:
    """Best of --repeat for each of ruff, cold and warm; cold always starts from an empty
    cache folder and warm reuses the cache its cold run just filled. Each round runs ruff
    right before its cold scan, so a round's cold/ruff ratio is measured side by side."""
    ruff_runs: list[Run] = []
    base, env = migrate_base(args.migrate_cmd)
    colds, warms, edits = [], [], []
    touched = min(tree.rglob("*.py"))
    with tempfile.TemporaryDirectory(prefix="migrate-bench-") as tmp:
        out = Path(tmp) / "scan.json"
        scan = [*base, "scan", str(tree), "--format", "json", "-o", str(out), "--exit-zero", *args.scan_args]
        for i in range(args.repeat):
            env["MIGRATE_CACHE_DIR"] = str(Path(tmp) / f"cache{i}")
            ruff_runs.extend(time_ruff(tree, 1))
            colds.append(run(scan, env))
            report = _read_report(out, colds[-1])
            warms.append(run(scan, env))
            _read_report(out, warms[-1])
            st = touched.stat()
            os.utime(touched, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
            try:
                edits.append(run(scan, env))
            finally:
                os.utime(touched, ns=(st.st_atime_ns, st.st_mtime_ns))
            _read_report(out, edits[-1])
    ruff_s = min(r.seconds for r in ruff_runs)
    cold_s, warm_s = min(r.seconds for r in colds), min(r.seconds for r in warms)
    edit_s = min(r.seconds for r in edits)
    summary = report["summary"]
    return {
        "project": tree.name,
        "py_files": sum(1 for _ in tree.rglob("*.py")),
        "files": summary["files_scanned"],
        "findings": summary["findings"],
        "errors": len(report["errors"]),
        "ruff_s": ruff_s,
        "cold_s": cold_s,
        "warm_s": warm_s,
        "cold_ratio": cold_s / ruff_s,
        "warm_ratio": warm_s / ruff_s,
        "edit_s": edit_s,
        "edit_ratio": edit_s / ruff_s,
        "peak_rss_mb": max(r.peak_mb for r in colds + warms + edits),
        "cold_ratio_rounds": [c.seconds / r.seconds for c, r in zip(colds, ruff_runs, strict=True)],
        "runs_s": {
            "ruff": [round(r.seconds, 3) for r in ruff_runs],
            "cold": [round(r.seconds, 3) for r in colds],
            "warm": [round(r.seconds, 3) for r in warms],
            "edited": [round(r.seconds, 3) for r in edits],
        },
    }


def _read_report(out: Path, result: Run) -> dict:
    if result.returncode != 0 or not out.is_file():
        tail = "\n".join(result.stderr.strip().splitlines()[-5:])
        print(f"bench: migrate scan failed (exit {result.returncode}):\n{tail}", file=sys.stderr)
        sys.exit(2)
    return json.loads(out.read_text(encoding="utf-8"))


def print_table(rows: list[dict]) -> None:
    head = (
        f"{'project':<22}{'py files':>9}{'scanned':>9}{'findings':>9}{'errors':>7}"
        f"{'ruff s':>8}{'cold s':>8}{'warm s':>8}{'edit s':>8}{'cold/ruff':>10}{'warm/ruff':>10}"
        f"{'edit/ruff':>10}{'peak RSS':>10}"
    )
    print(head)
    for r in rows:
        print(
            f"{r['project']:<22}{r['py_files']:>9}{r['files']:>9}{r['findings']:>9}"
            f"{r['errors']:>7}{r['ruff_s']:>8.2f}{r['cold_s']:>8.2f}{r['warm_s']:>8.2f}{r['edit_s']:>8.2f}"
            f"{r['cold_ratio']:>9.2f}x{r['warm_ratio']:>9.2f}x{r['edit_ratio']:>9.2f}x"
            f"{r['peak_rss_mb']:>7.0f} MB"
        )


def print_rounds(rows: list[dict]) -> None:
    """Each round's cold/ruff, ruff run right before the cold scan (drift-free, beside the
    best-of ratio above)."""
    for r in rows:
        rounds = r["cold_ratio_rounds"]
        each = " ".join(f"{x:.2f}x" for x in rounds)
        print(f"{r['project']}: cold/ruff by round {each} (median {statistics.median(rounds):.2f}x)")


def check_targets(row: dict) -> bool:
    cold, warm, rss = row["cold_ratio"], row["warm_ratio"], row["peak_rss_mb"]
    checks = [
        (cold <= COLD_MAX, f"cold scan <= {COLD_MAX:g}x ruff: {cold:.2f}x"),
        (warm <= WARM_MAX, f"warm scan <= {WARM_MAX:g}x ruff: {warm:.2f}x"),
        (rss < RSS_MAX_MB, f"peak RSS < 1 GB: {rss:.0f} MB"),
    ]
    print(f"\nTargets ({row['project']}):")
    for ok, text in checks:
        print(f"{'PASS' if ok else 'FAIL'} {text}")
    return all(ok for ok, _ in checks)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    scan_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--projects", default=",".join(PROJECTS), help=f"comma-separated subset of {', '.join(PROJECTS)}"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command; the best time is used")
    parser.add_argument(
        "--migrate-cmd", help="command for migrate (default: python -m migrate from this checkout)"
    )
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    args = parser.parse_args(argv)
    args.scan_args = scan_args
    names = [n.strip() for n in args.projects.split(",") if n.strip()]
    unknown = [n for n in names if n not in PROJECTS]
    if unknown:
        parser.error(f"unknown project(s): {', '.join(unknown)}")
    ruff_version = subprocess.run([ruff_exe(), "--version"], capture_output=True, text=True).stdout.strip()
    print(f"migrate scan vs {ruff_version}; {os.cpu_count()} CPUs; python {platform.python_version()}\n")
    trees = [extract(fetch(n, PROJECTS[n])) for n in names]
    if not scan_available(args.migrate_cmd):
        print("bench: `migrate scan` is not available; ruff alone:", file=sys.stderr)
        for tree in trees:
            times = [r.seconds for r in time_ruff(tree, args.repeat)]
            print(f"{tree.name:<22} ruff {min(times):.2f} s (runs: {', '.join(f'{t:.2f}' for t in times)})")
        return 2
    rows = [bench_tree(tree, args) for tree in trees]
    print_table(rows)
    print_rounds(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    target = [r for r in rows if r["project"].startswith(TARGET + "-")]
    return 0 if all(check_targets(r) for r in target) else 1


if __name__ == "__main__":
    sys.exit(main())
