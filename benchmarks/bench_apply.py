"""Benchmark `migrate apply` on copies of real trees (transformers, deepspeed, timm sdists).

Prints, per tree and in one run: files changed, edits per rule, wall time of `apply` as a
ratio to `migrate scan` of the same tree (both cold: --no-cache, side by side), and the
safety checks: every changed Python file compiles, a second apply changes nothing, and
every file apply did not report as changed is byte-identical to the original. Per port
target (--target, default all three): the package still imports without torch_npu (where
it imported before), and how many "cuda" string literals the port kept (portable must keep
every one: CUDA keeps working). For portable also: the device helper modules it added, the
multi-call device expressions it wrote inline (goal 0: every site names one helper) and the
`hasattr(torch, "npu")` tests it wrote (goal 0).

    python benchmarks/bench_apply.py [--unsafe-fixes] [--only transformers] [--target portable]
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import tokenize
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SDISTS = REPO / "benchmarks" / ".work" / "sdists"
PACKAGES = {"transformers": "5.23.0", "deepspeed": "0.19.8", "timm": "1.0.31"}
TARGETS = ("portable", "npu", "transfer")
# import the package with torch_npu blocked (as on a machine without it)
IMPORT_CHECK = (
    "import sys; sys.modules['torch_npu'] = None; sys.path.insert(0, sys.argv[1]); "
    "import importlib; importlib.import_module(sys.argv[2])"
)


def ensure_sdists() -> dict[str, Path]:
    SDISTS.mkdir(parents=True, exist_ok=True)
    wanted = {name: SDISTS / f"{name}-{version}.tar.gz" for name, version in PACKAGES.items()}
    missing = [f"{n}=={PACKAGES[n]}" for n, p in wanted.items() if not p.exists()]
    if missing:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "-d",
                str(SDISTS),
                *missing,
            ],
            check=True,
        )
    return wanted


def extract(archive: Path, dest: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    (top,) = [p for p in dest.iterdir() if p.is_dir()]
    return top


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink()
    }


def migrate(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    cmd = [sys.executable, "-m", "migrate", *args, "--no-cache", "--no-progress"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    return time.perf_counter() - start, proc


def cuda_literals(files: dict[str, bytes]) -> int:
    """String literals that are exactly "cuda" or "cuda:N", over the Python files."""
    n = 0
    for rel, data in files.items():
        if not rel.endswith(".py"):
            continue
        try:
            for tok in tokenize.tokenize(io.BytesIO(data).readline):
                if (
                    tok.type == tokenize.STRING
                    and tok.string.strip("'\"").startswith("cuda")
                    and tok.string.strip("'\"").split(":")[0] == "cuda"
                ):
                    n += 1
        except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
            continue
    return n


# Multi-call device expressions a port could write inline at a call site (outside a helper).
INLINE = re.compile(
    r"current_accelerator\(|get_device_module\([\"']|"
    r"torch\.npu if hasattr|accelerator\.is_available\(\) else"
)
HASATTR_NPU = re.compile(r"""hasattr\(\s*\w+\s*,\s*['"]npu['"]\s*\)""")
HELPER_DEF = re.compile(
    r"^def (get_device_type|get_device_module|get_amp_device_type|"
    r"get_dist_backend)\(.*?(?=^\S)",
    re.MULTILINE | re.DOTALL,
)


def written(pattern: re.Pattern, before: dict[str, bytes], after: dict[str, bytes]) -> int:
    """How many more matches of ``pattern`` the Python files hold after the port (the port's
    own helper definitions left out)."""
    n = 0
    for rel, data in after.items():
        if rel.endswith(".py"):
            new = HELPER_DEF.sub("", data.decode("utf-8", "replace") + "\n")
            old = HELPER_DEF.sub("", before.get(rel, b"").decode("utf-8", "replace") + "\n")
            n += max(0, len(pattern.findall(new)) - len(pattern.findall(old)))
    return n


def imports(tree: Path, name: str) -> bool:
    path = tree / "src" if (tree / "src" / name).is_dir() else tree
    proc = subprocess.run(
        [sys.executable, "-B", "-c", IMPORT_CHECK, str(path), name],  # -B: no __pycache__ in the tree
        capture_output=True,
        text=True,
        timeout=600,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    return proc.returncode == 0


def bench_tree(name: str, source: Path, work: Path, unsafe: list[str], target: str) -> dict:
    tree = work / target / name
    tree.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", str(source), str(tree)], check=True)
    before = snapshot(tree)
    imported_before = imports(tree, name)
    scan_s, scan = migrate("scan", str(tree), "--format", "json", "--exit-zero", "--target", target)
    if scan.returncode != 0:
        raise SystemExit(f"scan failed on {name}: {scan.stderr[-400:]}")
    unsafe = [*unsafe, "--target", target]
    apply_s, proc = migrate("apply", str(tree), "--format", "json", "--exit-zero", *unsafe)
    doc = json.loads(proc.stdout)
    after = snapshot(tree)
    changed = set(doc["files"])
    differing = {rel for rel in after if before.get(rel) != after[rel]}
    not_compiling = []
    for rel in sorted(changed):
        if rel.endswith(".py"):
            try:
                compile(after[rel], rel, "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as exc:
                not_compiling.append(f"{rel}: {exc}")
    _, second = migrate("apply", str(tree), "--check", "--format", "json", "--exit-zero", *unsafe)
    again = json.loads(second.stdout)["summary"]["files_changed"]
    # a literal, or the body of one (npu edits change "cuda" inside its quotes)
    cuda_lit = re.compile(r"""(['"])cuda(:\d+)?\1|^cuda(:\d+)?$""")
    npu_lit = re.compile(r"""(['"])npu(:\d+)?\1|^npu(:\d+)?$""")
    to_npu = [
        e
        for e in doc["edits"]
        if cuda_lit.search(e["before"]) and npu_lit.search(e["after"]) and not cuda_lit.search(e["after"])
    ]
    return {
        "name": name,
        "target": target,
        "files": len(before),
        "cuda_to_npu": len(to_npu),
        "imports": (imported_before, imports(tree, name)),
        "cuda_literals": (cuda_literals(before), cuda_literals(after)),
        "files_changed": len(changed),
        "edits": Counter(e["rule"] for e in doc["edits"]),
        "scan_s": scan_s,
        "apply_s": apply_s,
        "not_compiling": not_compiling,
        "second_run_changes": again,
        "unexpected_changes": sorted(differing - changed),
        "missing_changes": sorted(changed - differing),
        "errors": doc["errors"],
        "created": sorted(set(after) - set(before)),
        "inline": written(INLINE, before, after),
        "hasattr_npu": written(HASATTR_NPU, before, after),
    }


def report(r: dict) -> None:
    ok = lambda cond: "PASS" if cond else "FAIL"  # noqa: E731
    print(
        f"\n== {r['name']} --target {r['target']}: {r['files']} files, {r['files_changed']} changed, "
        f"{sum(r['edits'].values())} edits"
    )
    for rule, n in sorted(r["edits"].items()):
        print(f"   {rule}  {n:6d}")
    print(
        f"   wall: scan {r['scan_s']:.2f}s, apply {r['apply_s']:.2f}s, "
        f"ratio apply/scan {r['apply_s'] / r['scan_s']:.2f}"
    )
    print(f"   {ok(not r['not_compiling'])} changed files compile ({len(r['not_compiling'])} do not)")
    for line in r["not_compiling"][:5]:
        print(f"      {line}")
    print(f"   {ok(r['second_run_changes'] == 0)} second run changes {r['second_run_changes']} files")
    print(
        f"   {ok(not r['unexpected_changes'] and not r['missing_changes'])} files not "
        f"reported as changed are byte-identical ({len(r['unexpected_changes'])} differ)"
    )
    was, now = r["imports"]
    print(f"   {ok(now or not was)} imports without torch_npu: before {was}, after {now}")
    lits_before, lits_after = r["cuda_literals"]
    verdict = ok(r["cuda_to_npu"] == 0) if r["target"] == "portable" else "INFO"
    print(
        f'   {verdict} "cuda" literals replaced by "npu": {r["cuda_to_npu"]} '
        f'("cuda" literals {lits_before} before, {lits_after} after; the others now follow '
        "the current accelerator)"
    )
    if r["target"] == "portable":
        print(f"   INFO device helper modules added: {len(r['created'])} {r['created'][:4]}")
        print(f"   {ok(r['inline'] == 0)} multi-call device expressions written inline: {r['inline']}")
        print(f'   {ok(r["hasattr_npu"] == 0)} hasattr(torch, "npu") tests written: {r["hasattr_npu"]}')
    refused = [e for e in r["errors"] if e["message"].startswith("not written")]
    print(
        f"   {ok(not refused)} rewrites refused: {len(refused)}; scan errors: "
        f"{len(r['errors']) - len(refused)}"
    )
    for e in refused[:5]:
        print(f"      {e['path']}: {e['message']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--unsafe-fixes", action="store_true")
    ap.add_argument("--only", choices=sorted(PACKAGES), action="append")
    ap.add_argument("--target", choices=TARGETS, action="append")
    args = ap.parse_args()
    sdists = ensure_sdists()
    unsafe = ["--unsafe-fixes"] if args.unsafe_fixes else []
    with tempfile.TemporaryDirectory(prefix="bench-apply-") as tmp:
        tmp = Path(tmp)
        for name in args.only or list(PACKAGES):
            src = extract(sdists[name], tmp / "src" / name)
            for target in args.target or TARGETS:
                report(bench_tree(name, src, tmp / "work", unsafe, target))


if __name__ == "__main__":
    main()
