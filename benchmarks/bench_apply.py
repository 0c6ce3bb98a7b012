"""Benchmark `migrate apply` on copies of real trees (transformers, deepspeed, timm sdists).

Prints, per tree and in one run: files changed, edits per rule, wall time of `apply` as a
ratio to `migrate scan` of the same tree (both cold: --no-cache, side by side), and the
safety checks: every changed Python file compiles, a second apply changes nothing, and
every file apply did not report as changed is byte-identical to the original.

    python benchmarks/bench_apply.py [--unsafe-fixes] [--only transformers]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SDISTS = REPO / "benchmarks" / ".work" / "sdists"
PACKAGES = {"transformers": "5.23.0", "deepspeed": "0.19.8", "timm": "1.0.31"}


def ensure_sdists() -> dict[str, Path]:
    SDISTS.mkdir(parents=True, exist_ok=True)
    wanted = {name: SDISTS / f"{name}-{version}.tar.gz" for name, version in PACKAGES.items()}
    missing = [f"{n}=={PACKAGES[n]}" for n, p in wanted.items() if not p.exists()]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                        ":all:", "-d", str(SDISTS), *missing], check=True)
    return wanted


def extract(archive: Path, dest: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    (top,) = [p for p in dest.iterdir() if p.is_dir()]
    return top


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


def migrate(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    cmd = [sys.executable, "-m", "migrate", *args, "--no-cache", "--no-progress"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    return time.perf_counter() - start, proc


def bench_tree(name: str, source: Path, work: Path, unsafe: list[str]) -> dict:
    tree = work / name
    subprocess.run(["cp", "-a", str(source), str(tree)], check=True)
    before = snapshot(tree)
    scan_s, scan = migrate("scan", str(tree), "--format", "json", "--exit-zero")
    if scan.returncode != 0:
        raise SystemExit(f"scan failed on {name}: {scan.stderr[-400:]}")
    apply_s, proc = migrate("apply", str(tree), "--format", "json", "--exit-zero", *unsafe)
    doc = json.loads(proc.stdout)
    after = snapshot(tree)
    changed = set(doc["files"])
    differing = {rel for rel in before if before[rel] != after.get(rel)}
    not_compiling = []
    for rel in sorted(changed):
        if rel.endswith(".py"):
            try:
                compile(after[rel], rel, "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as exc:
                not_compiling.append(f"{rel}: {exc}")
    _, second = migrate("apply", str(tree), "--check", "--format", "json", "--exit-zero", *unsafe)
    again = json.loads(second.stdout)["summary"]["files_changed"]
    return {
        "name": name, "files": len(before), "files_changed": len(changed),
        "edits": Counter(e["rule"] for e in doc["edits"]), "scan_s": scan_s, "apply_s": apply_s,
        "not_compiling": not_compiling, "second_run_changes": again,
        "unexpected_changes": sorted(differing - changed), "missing_changes":
        sorted(changed - differing), "errors": doc["errors"],
    }


def report(r: dict) -> None:
    ok = lambda cond: "PASS" if cond else "FAIL"  # noqa: E731
    print(f"\n== {r['name']}: {r['files']} files, {r['files_changed']} changed, "
          f"{sum(r['edits'].values())} edits")
    for rule, n in sorted(r["edits"].items()):
        print(f"   {rule}  {n:6d}")
    print(f"   wall: scan {r['scan_s']:.2f}s, apply {r['apply_s']:.2f}s, "
          f"ratio apply/scan {r['apply_s'] / r['scan_s']:.2f}")
    print(f"   {ok(not r['not_compiling'])} changed files compile "
          f"({len(r['not_compiling'])} do not)")
    for line in r["not_compiling"][:5]:
        print(f"      {line}")
    print(f"   {ok(r['second_run_changes'] == 0)} second run changes "
          f"{r['second_run_changes']} files")
    print(f"   {ok(not r['unexpected_changes'] and not r['missing_changes'])} files not "
          f"reported as changed are byte-identical ({len(r['unexpected_changes'])} differ)")
    refused = [e for e in r["errors"] if e["message"].startswith("not written")]
    print(f"   {ok(not refused)} rewrites refused: {len(refused)}; scan errors: "
          f"{len(r['errors']) - len(refused)}")
    for e in refused[:5]:
        print(f"      {e['path']}: {e['message']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--unsafe-fixes", action="store_true")
    ap.add_argument("--only", choices=sorted(PACKAGES), action="append")
    args = ap.parse_args()
    sdists = ensure_sdists()
    unsafe = ["--unsafe-fixes"] if args.unsafe_fixes else []
    with tempfile.TemporaryDirectory(prefix="bench-apply-") as tmp:
        tmp = Path(tmp)
        for name in args.only or list(PACKAGES):
            src = extract(sdists[name], tmp / "src" / name)
            (tmp / "work").mkdir(exist_ok=True)
            report(bench_tree(name, src, tmp / "work", unsafe))


if __name__ == "__main__":
    main()
