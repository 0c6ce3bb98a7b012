"""How close is a portable port to the NPU support engineers merged upstream?

For each change in ``CHANGES`` (a merged "support NPU / Ascend" commit), the Python files it
modified are taken at its parent and ported with ``migrate apply`` twice:

* **alone**: each file copied by itself into an empty folder (a script, a file handed over);
* **checkout**: the parent's whole tree laid out (``git archive``), the same files ported in
  place, so the port sees the project around them (its helpers, its package, its config).

Each port is scored line by line against the merged change (device spellings folded, so
``torch.npu``, ``get_device_module()``, ``get_accelerator()`` ... count as one, and
``"npu"``, ``get_device_type()`` ... as one; quotes and whitespace ignored):

* **exact**: the engineers' added lines the port also wrote (same file, folded text);
* **touched**: the engineers' changed lines (removed and added) in hunks where the port
  changed something too;
* **extra**: the port's changed lines (files it created included) in no hunk the engineers
  changed.

Also per run: files that no longer compile after the port (``broken``: goal 0). A
``sed s/cuda/npu/`` of the same files is scored beside it (``--sed``).

The repositories are read from git mirrors on disk (``--mirrors``: folders named
``owner+name`` holding a git directory ``repo``, as the search tool's fetch lays them out, or
plain clones named ``owner+name``); nothing of theirs is kept. ``--migrate`` runs another
checkout of ascend-migrate (a folder holding ``migrate/``), e.g. the base of a branch:

    python benchmarks/bench_upstream.py [--mirrors /work/.mirror] [--migrate /tmp/base]
    python benchmarks/bench_upstream.py --only accelerate --show 2   # print 2 diffs
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# (owner/name, merged commit, title): merged NPU-support changes of projects ported upstream
CHANGES = [
    (
        "huggingface/accelerate",
        "c33adecc9f92808cbaeb0d34928e52e34180f964",
        "Add Ascend NPU accelerator support",
    ),
    ("huggingface/accelerate", "40056c69d131ec53b20aa518e68991351f21b352", "Add FSDP for NPU"),
    ("huggingface/accelerate", "937e08ce7564d38aa36b970435c5eb048202ca4a", "bf16 mixed precision for NPU"),
    ("huggingface/accelerate", "5e0eb0d75055da7135f784bfbe98fc7a977ffacc", "DeepSpeed support for NPU"),
    (
        "huggingface/accelerate",
        "9964f90fd7d50577998a22f3dba8590e644d255b",
        "npu support in big model inference",
    ),
    ("huggingface/accelerate", "217e1a248c39d66d694f9e5d4df0087802a0713f", "Sync states for npu fsdp"),
    ("huggingface/accelerate", "b703efdcc37f88f05366b261c4794f765493ebfa", "Local SGD support for NPU"),
    ("huggingface/trl", "d708ec272f292ded00a4d0f14b5bd214741b87f3", "Add Ascend NPU accelerator support"),
    ("huggingface/trl", "27a6f2201bc2c6b19f4ea2f780381dde094d0cc9", "GRPO for third-party accelerators"),
    ("huggingface/trl", "27adc301628cba3bacddb270f4da7a5180f17eee", "Ascend NPU support for vLLM server"),
    ("huggingface/trl", "a6c0c57f6b60358833fc435cddadb74b2ec70ee6", "NPU and XPU activation offloading"),
    ("UKPLab/sentence-transformers", "454cb376cb54b7e17538dc85983e4c1e36fa4a99", "support for ascend npu"),
    ("FlagOpen/FlagEmbedding", "f12147954c9ccfed476229e75b37f1cc975e02e2", "add ascend npu support"),
    ("EleutherAI/lm-evaluation-harness", "8f716817b73902ea74eb7b5041c30d22d3032f7b", "HFLM: Ascend NPU"),
    ("modelscope/FunASR", "34360664e3aa7638700bad5636af32e64c0fbfbd", "Support Huawei NPU"),
    ("modelscope/FunASR", "f87e86abdefd016a6222f52a1d2b00da85525d3d", "NPU autocast device selection"),
    ("open-compass/opencompass", "28eba6fe34fd41d906712d40f076ab0d0273f0e1", "npu adaptation (runner)"),
    ("open-compass/opencompass", "5868d5afa4d9574441c38988aa26e44de0bdd3b2", "Fix NPU support"),
    ("InternLM/xtuner", "2c06115f6e4e7c3ed5525b30e2020452b57246cd", "Add Ascend NPU as a backend"),
]

_FOLDS = [
    (
        r"torch_npu\.npu\b|torch\.npu\b|torch\.accelerator\b|torch\.get_device_module\([^()]*\)"
        r"|\b(?:get_device_module|get_torch_device|get_accelerator|get_torch_device_namespace)\(\)",
        "DEVMOD",
    ),
    (r"\b(?:get_device_type|get_device_name|get_amp_device_type|get_device)\(\)|\"npu\"", "DEVTYPE"),
    (r"\b(?:is_torch_npu_available|is_npu_available|npu_is_available)\(\)", "NPUCHECK"),
    (r"\b(?:get_dist_backend)\(\)|\"hccl\"", "BACKEND"),
]


# a device spelled around an NPU check counts as the spelling it chooses
_CHOICES = [
    (r"\(?\b\w+\.npu if \w+\(\) else \w+\.cuda\)?", "torch.npu"),
    (r'"npu" if \w+\(\) else "cuda"', '"npu"'),
    (r'"hccl" if \w+\(\) else "nccl"', '"hccl"'),
]


def fold(line: str) -> str:
    """A line as compared: quotes as one, spaces gone, device spellings folded."""
    text = re.sub(r"\s+", " ", line.replace("'", '"'))
    for pattern, token in _CHOICES:
        text = re.sub(pattern, token, text)
    text = text.replace(" ", "")
    for pattern, token in _FOLDS:
        text = re.sub(pattern, token, text)
    return text


@dataclass
class Score:
    engineer: int = 0  # lines the engineers changed (removed + added)
    added: int = 0  # ... of them added
    exact: int = 0  # added lines the port wrote too
    touched: int = 0  # engineer-changed lines in hunks the port changed too
    port: int = 0  # lines the port changed (created files included)
    extra: int = 0  # ... in no engineer hunk
    broken: int = 0  # files that no longer compile
    files: int = 0

    def add(self, other: Score) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def row(self) -> str:
        def pct(a: int, b: int) -> str:
            return f"{100 * a / b:5.1f}%" if b else "   - "

        return (
            f"exact {pct(self.exact, self.added)}  touched {pct(self.touched, self.engineer)}  "
            f"extra {pct(self.extra, self.port)} ({self.port} lines)  broken {self.broken}"
        )


def _hunks(old: list[str], new: list[str]) -> list[tuple[int, int, int, int]]:
    ops = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in ops if tag != "equal"]


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Old-line spans overlap (an insertion is the gap around its anchor)."""
    a0, a1 = (a[0] - 1, a[0] + 1) if a[0] == a[1] else a
    b0, b1 = (b[0] - 1, b[0] + 1) if b[0] == b[1] else b
    return a0 < b1 and b0 < a1


def score_file(old: str, engineer: str, port: str | None) -> Score:
    """One file: the port (None: it did not change the file) against the engineers'."""
    o = [x.rstrip() for x in old.splitlines()]
    e = [x.rstrip() for x in engineer.splitlines()]
    p = [x.rstrip() for x in (port if port is not None else old).splitlines()]
    eh, ph = _hunks(o, e), _hunks(o, p)
    s = Score(files=1)
    e_added = Counter(fold(x) for i1, i2, j1, j2 in eh for x in e[j1:j2] if x.strip())
    p_added = Counter(fold(x) for i1, i2, j1, j2 in ph for x in p[j1:j2] if x.strip())
    s.added = sum(e_added.values())
    s.exact = sum((e_added & p_added).values())
    for i1, i2, j1, j2 in eh:
        size = (i2 - i1) + (j2 - j1)
        s.engineer += size
        if any(_overlap((i1, i2), (a, b)) for a, b, _, _ in ph):
            s.touched += size
    for i1, i2, j1, j2 in ph:
        size = (i2 - i1) + (j2 - j1)
        s.port += size
        if not any(_overlap((i1, i2), (a, b)) for a, b, _, _ in eh):
            s.extra += size
    if port is not None:
        try:
            compile(port, "<port>", "exec")
        except (SyntaxError, ValueError):
            s.broken = 1
    return s


def _git(mirror: Path, *args: str) -> str:
    out = subprocess.run(["git", "--git-dir", str(mirror), *args], capture_output=True, check=True)
    return out.stdout.decode("utf-8", "replace")


def find_mirror(root: Path, repo: str) -> Path | None:
    base = root / repo.replace("/", "+")
    for cand in (base / "repo", base / ".git", base):
        if (cand / "HEAD").is_file() and (cand / "objects").is_dir():
            return cand
    return None


def _migrate(checkout: Path, args: list[str], cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(checkout), "MIGRATE_CACHE_DIR": str(cwd / ".migrate-cache")}
    cmd = [sys.executable, "-m", "migrate", "apply", *args, "--no-cache", "--exit-zero", "--no-progress"]
    subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, check=False)


def _sed(text: str) -> str:
    return text.replace("cuda", "npu").replace("nccl", "hccl")


@dataclass
class ChangeResult:
    title: str
    files: list[str]
    alone: Score = field(default_factory=Score)
    checkout: Score = field(default_factory=Score)
    sed: Score = field(default_factory=Score)
    diffs: dict[str, str] = field(default_factory=dict)


def run_change(mirror: Path, sha: str, title: str, migrate_root: Path, target: str) -> ChangeResult:
    parent = sha + "^"
    names = _git(mirror, "diff", "--name-only", "--diff-filter=M", parent, sha, "--", "*.py").split()
    res = ChangeResult(title, names)
    olds = {n: _git(mirror, "show", f"{parent}:{n}") for n in names}
    news = {n: _git(mirror, "show", f"{sha}:{n}") for n in names}
    flags = ["--target", target]
    with tempfile.TemporaryDirectory(prefix="bench-upstream-") as tmp:
        work = Path(tmp)
        for i, name in enumerate(names):  # alone: one folder per file
            folder = work / "alone" / str(i)
            folder.mkdir(parents=True)
            path = folder / Path(name).name
            path.write_text(olds[name], encoding="utf-8")
            _migrate(migrate_root, [*flags, str(path)], folder)
            ported = path.read_text(encoding="utf-8")
            res.alone.add(score_file(olds[name], news[name], ported))
            created = [p for p in folder.rglob("*.py") if p != path]
            for extra in created:
                n = len(extra.read_text(encoding="utf-8").splitlines())
                res.alone.port, res.alone.extra = res.alone.port + n, res.alone.extra + n
            res.sed.add(score_file(olds[name], news[name], _sed(olds[name])))
        tree = work / "checkout"
        tree.mkdir()
        lay_out(mirror, parent, tree)
        before = {p for p in tree.rglob("*.py")}
        _migrate(migrate_root, [*flags, *names], tree)
        for name in names:
            ported = (tree / name).read_text(encoding="utf-8", errors="replace")
            res.checkout.add(score_file(olds[name], news[name], ported))
            if ported != olds[name]:
                res.diffs[name] = _diff(name, olds[name], ported)
        for made in sorted(set(tree.rglob("*.py")) - before):
            n = len(made.read_text(encoding="utf-8", errors="replace").splitlines())
            res.checkout.port, res.checkout.extra = res.checkout.port + n, res.checkout.extra + n
            res.diffs[str(made.relative_to(tree))] = f"(created, {n} lines)"
    return res


# what a port reads of a checkout: its code and the files that configure it
_TREE_FILES = re.compile(
    r"(\.py|\.pyi|/?pyproject\.toml|/?setup\.cfg|/?tox\.ini|/?\.flake8|/?\.?ruff\.toml|/?requirements[^/]*\.txt)$"
)


def lay_out(mirror: Path, rev: str, tree: Path) -> None:
    """The code and configuration files of ``rev`` under ``tree`` (a mirror may lack large
    blobs: a file it cannot give is left out)."""
    listing = _git(mirror, "ls-tree", "-r", "-z", rev).split("\0")
    for row in listing:
        if not row or "\t" not in row:
            continue
        meta, name = row.split("\t", 1)
        mode, kind, blob = meta.split()
        if kind != "blob" or mode == "120000" or not _TREE_FILES.search(name):
            continue
        got = subprocess.run(["git", "--git-dir", str(mirror), "cat-file", "blob", blob], capture_output=True)
        if got.returncode != 0:
            continue
        path = tree / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(got.stdout)


def _diff(name: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{name}", f"b/{name}")
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirrors", type=Path, default=Path(os.environ.get("MIGRATE_MIRRORS", "/work/.mirror")))
    ap.add_argument("--migrate", type=Path, default=REPO, help="the ascend-migrate checkout to run")
    ap.add_argument("--target", default="portable")
    ap.add_argument("--only", default=None, help="changes whose repository contains this")
    ap.add_argument("--show", type=int, default=0, help="print the checkout diffs of N changes")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    totals = {"alone": Score(), "checkout": Score(), "sed": Score()}
    rows, shown, missing = [], 0, []
    for repo, sha, title in CHANGES:
        if args.only and args.only not in repo:
            continue
        mirror = find_mirror(args.mirrors, repo)
        if mirror is None:
            missing.append(repo)
            continue
        res = run_change(mirror, sha, title, args.migrate.resolve(), args.target)
        print(f"{repo} {sha[:9]} {title} ({len(res.files)} files)")
        for kind in ("alone", "checkout", "sed"):
            score = getattr(res, kind)
            totals[kind].add(score)
            print(f"   {kind:9} {score.row()}")
        rows.append({"repo": repo, "sha": sha, **{k: vars(getattr(res, k)) for k in totals}})
        if shown < args.show:
            shown += 1
            for text in res.diffs.values():
                print(text)
    print(f"\n{len(rows)} changes scored; mirrors missing: {sorted(set(missing))}")
    for kind, score in totals.items():
        print(f"TOTAL {kind:9} {score.row()}")
    if args.json:
        args.json.write_text(
            json.dumps({"changes": rows, "totals": {k: vars(v) for k, v in totals.items()}}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
