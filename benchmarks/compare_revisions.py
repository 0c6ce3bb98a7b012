"""Do two revisions of ascend-migrate give the same findings and the same fixes on a tree?

    python benchmarks/compare_revisions.py REV_A [REV_B] -- TREE [TREE ...]

Checks out each revision into a temporary git worktree, runs ``migrate scan --format json``
and ``migrate apply --diff --unsafe-fixes`` from it on the same trees (read-only: --diff
writes nothing), and prints the findings only one side reports and whether the diffs are
byte-identical. REV_B defaults to the working tree. Exit 1 if anything differs. Used to
prove a refactor changes no behaviour (e.g. the layout move of issue 10).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_rev(checkout: Path, trees: list[str]) -> tuple[set, bytes]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    base = [sys.executable, "-m", "migrate"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "scan.json"
        subprocess.run(
            [*base, "scan", *trees, "--format", "json", "--no-cache", "--exit-zero", "-o", str(out)],
            cwd=checkout,
            env=env,
            check=True,
        )
        findings = json.loads(out.read_text())["findings"]
    diff = subprocess.run(
        [*base, "apply", *trees, "--diff", "--unsafe-fixes", "--no-cache", "--exit-zero"],
        cwd=checkout,
        env=env,
        capture_output=True,
    ).stdout
    keys = {
        (
            f["path"],
            f["line"],
            f["column"],
            f["rule"],
            f["category"],
            f["message"],
            f.get("npu_aware"),
            f.get("impact"),
            json.dumps(f.get("fix"), sort_keys=True),
        )
        for f in findings
    }
    return keys, diff


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("revs", nargs="+", help="REV_A [REV_B]; REV_B defaults to the working tree")
    ap.add_argument("--trees", nargs="+", required=True, help="folders to scan (absolute)")
    args = ap.parse_args()
    trees = [str(Path(t).resolve()) for t in args.trees]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, rev in enumerate(args.revs[:2]):
            wt = Path(tmp) / f"rev{i}"
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(wt), rev], check=True
            )
            try:
                results.append(run_rev(wt, trees))
            finally:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(wt)])
        if len(args.revs) == 1:
            results.append(run_rev(REPO, trees))
    (a, da), (b, db) = results
    print(f"findings: {len(a)} vs {len(b)}; only in A: {len(a - b)}; only in B: {len(b - a)}")
    for k in sorted(a - b)[:20]:
        print("  -", k)
    for k in sorted(b - a)[:20]:
        print("  +", k)
    print(f"apply --diff: {len(da)} vs {len(db)} bytes, {'identical' if da == db else 'DIFFERENT'}")
    return 0 if a == b and da == db else 1


if __name__ == "__main__":
    sys.exit(main())
