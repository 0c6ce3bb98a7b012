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
    python benchmarks/bench_upstream.py --set new --dump /tmp/diffs   # the second set, every diff kept

``--set`` picks ``CHANGES`` (old, the default), ``CHANGES_NEW`` (new) or both (all). ``imports``
counts ported files that would fail when run (``upstream_imports.py``).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from upstream_imports import undefined, unresolved

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

# A second set (issue 35's proof): 19 merged changes of 11 projects none of the above comes from
CHANGES_NEW = [
    ("2noise/ChatTTS", "a1aebd4d2e290d360546de1fd901779bdfcc0dde", "feat(utils): add NPU Support (#777)"),
    ("pytorch/torchchat", "701d82658d0a48799131a7f6692574648068f118", "Add Ascend NPU Support (#1521)"),
    (
        "meta-pytorch/torchtune",
        "4389b4d81398da0890aa686ef38cc15c898e2036",
        "Add Ascend NPU as a backend (#1826)",
    ),
    (
        "meta-pytorch/torchtune",
        "c5f20b967d5e4745bf673b3abd4d8e746531a71c",
        "Ascend NPU backend for single device recipes (#2234)",
    ),
    (
        "meta-pytorch/torchtune",
        "fe13b3ba4f892772cd197cb4da7fbbb50e0e531f",
        "Ascend NPU backend for distributed recipes (#2646)",
    ),
    (
        "huggingface/pytorch-image-models",
        "81b59faf77df0043f2c6ada9d792cb8b906ecc19",
        "NPU backend support for val and inference (#2109, merge)",
    ),
    (
        "open-mmlab/mmengine",
        "601db12d38245140775ed189fcc3b4815843b567",
        "Support engine with NPU backend (#572)",
    ),
    (
        "open-mmlab/mmengine",
        "e1c6079d73f593fa6dbdbb2e6bc825814c034404",
        "collect_results for Ascend NPU (#1309)",
    ),
    ("hiyouga/LLaMA-Factory", "46a718f3390a5d9a36a5a51d1074b38ab0021665", "Add Ascend NPU support (#975)"),
    ("huggingface/diffusers", "e6ff75284025323f199313d9e076796c6ff8dd8a", "Add npu support (#7144)"),
    (
        "huggingface/diffusers",
        "98ba18ba55f1f74b3d3b51fbe1db2c6978c9f9ed",
        "Ascend NPU support for SDXL (#7916)",
    ),
    ("huggingface/diffusers", "07860f991639f35f4b5a152676bd4d590c3e589e", "NPU Adaption for Sana (#10409)"),
    (
        "huggingface/diffusers",
        "5939ace91bd090a2593b76f57707c104da427c51",
        "NPU for get device function (#11617)",
    ),
    ("modelscope/ms-swift", "8b5dfdfe93874cccecafd0c773efbeb722f6274e", "Support npu (#528)"),
    ("modelscope/ms-swift", "43ee77cd95c804a4c4543492b5c9d74241a2b113", "support grpo npu (#3102)"),
    (
        "modelscope/ms-swift",
        "d0368be8fd314051a2f2cb9a66fc8c2e11ba1511",
        "memory log missing on Ascend NPU (#6647)",
    ),
    ("Comfy-Org/ComfyUI", "c4bfdba3301eb8dd2000b1b22e4752a662d4c856", "Support ascend npu (#5436)"),
    (
        "Comfy-Org/ComfyUI",
        "1364548c721a466adcdc60e49ee291b0d4255245",
        "run on the specified Ascend NPU (#9663)",
    ),
    (
        "opendatalab/MinerU",
        "e6496b57765ced553c10b70ce11797588b7fd255",
        "Ascend NPU router multi-card (#4846)",
    ),
]

SETS = {"old": CHANGES, "new": CHANGES_NEW, "all": CHANGES + CHANGES_NEW}

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
    imports: int = 0  # files with an added import that does not resolve or a name nothing binds
    files: int = 0

    def add(self, other: Score) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def row(self) -> str:
        def pct(a: int, b: int) -> str:
            return f"{100 * a / b:5.1f}%" if b else "   - "

        return (
            f"exact {pct(self.exact, self.added)}  touched {pct(self.touched, self.engineer)}  "
            f"extra {pct(self.extra, self.port)} ({self.port} lines)  broken {self.broken}  "
            f"imports {self.imports}"
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
    ports: dict[str, dict[str, str]] = field(default_factory=dict)  # kind -> file -> ported text
    unresolved: list[str] = field(default_factory=list)  # "kind file: module"


def run_change(mirror: Path, sha: str, title: str, migrate_root: Path, target: str) -> ChangeResult:
    parent = sha + "^"
    names = _git(mirror, "diff", "--name-only", "--diff-filter=M", parent, sha, "--", "*.py").split()
    res = ChangeResult(title, names)
    olds = {n: _git(mirror, "show", f"{parent}:{n}") for n in names}
    news = {n: _git(mirror, "show", f"{sha}:{n}") for n in names}
    res.ports = {"parent": olds, "engineer": news, "alone": {}, "checkout": {}, "sed": {}}
    with tempfile.TemporaryDirectory(prefix="bench-upstream-") as tmp:
        work = Path(tmp)
        pristine = work / "pristine"
        lay_out(mirror, parent, pristine)
        for i, name in enumerate(names):
            _run_alone(
                res, work / "alone" / str(i), name, olds[name], news[name], (migrate_root, target), pristine
            )
        tree = work / "checkout"
        shutil.copytree(pristine, tree)
        before = {p for p in tree.rglob("*.py")}
        _migrate(migrate_root, ["--target", target, *names], tree)
        for name in names:
            ported = (tree / name).read_text(encoding="utf-8", errors="replace")
            res.ports["checkout"][name] = ported
            res.checkout.add(score_file(olds[name], news[name], ported))
            _check_imports(res, "checkout", name, olds[name], ported, ((tree / name).parent, tree, pristine))
            if ported != olds[name]:
                res.diffs[name] = _diff(name, olds[name], ported)
        for made in sorted(set(tree.rglob("*.py")) - before):
            text = made.read_text(encoding="utf-8", errors="replace")
            n = len(text.splitlines())
            res.checkout.port, res.checkout.extra = res.checkout.port + n, res.checkout.extra + n
            res.diffs[str(made.relative_to(tree))] = f"(created, {n} lines)"
            res.ports["checkout"]["+" + str(made.relative_to(tree))] = text
    return res


def _run_alone(
    res: ChangeResult, folder: Path, name: str, old: str, new: str, how: tuple[Path, str], pristine: Path
) -> None:
    """``name`` ported by itself in an empty folder, and its sed port."""
    folder.mkdir(parents=True)
    path = folder / Path(name).name
    path.write_text(old, encoding="utf-8")
    _migrate(how[0], ["--target", how[1], str(path)], folder)
    ported = path.read_text(encoding="utf-8")
    res.ports["alone"][name] = ported
    res.alone.add(score_file(old, new, ported))
    _check_imports(res, "alone", name, old, ported, (folder, folder, pristine))
    for extra in [p for p in folder.rglob("*.py") if p != path]:
        text = extra.read_text(encoding="utf-8")
        n = len(text.splitlines())
        res.alone.port, res.alone.extra = res.alone.port + n, res.alone.extra + n
        res.ports["alone"][f"+{name}:{extra.name}"] = text
    res.ports["sed"][name] = _sed(old)
    res.sed.add(score_file(old, new, _sed(old)))


def _check_imports(
    res: ChangeResult, kind: str, name: str, old: str, port: str, where: tuple[Path, Path, Path]
) -> None:
    bad = unresolved(old, port, *where) + [f"undefined name {n}" for n in undefined(old, port)]
    if bad:
        getattr(res, kind).imports += 1
        res.unresolved.extend(f"{kind} {name}: {m}" for m in bad)


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


def dump(folder: Path, res: ChangeResult) -> None:
    """Per kind, one unified diff of every file from its parent (created files in full)."""
    folder.mkdir(parents=True, exist_ok=True)
    olds = res.ports["parent"]
    for kind in ("engineer", "alone", "checkout", "sed"):
        parts = []
        for name, text in res.ports[kind].items():
            if name.startswith("+"):
                parts.append(f"### created {name[1:]}\n{text}")
            elif text != olds[name]:
                parts.append(_diff(name, olds[name], text))
        (folder / f"{kind}.diff").write_text("".join(parts), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirrors", type=Path, default=Path(os.environ.get("MIGRATE_MIRRORS", "/work/.mirror")))
    ap.add_argument("--migrate", type=Path, default=REPO, help="the ascend-migrate checkout to run")
    ap.add_argument("--target", default="portable")
    ap.add_argument("--set", choices=sorted(SETS), default="old", help="which list of changes (old: CHANGES)")
    ap.add_argument("--only", default=None, help="changes whose repository contains this")
    ap.add_argument(
        "--dump", type=Path, default=None, help="write every file's diffs (parent -> each port) here"
    )
    ap.add_argument("--show", type=int, default=0, help="print the checkout diffs of N changes")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    totals = {"alone": Score(), "checkout": Score(), "sed": Score()}
    rows, shown, missing = [], 0, []
    for repo, sha, title in SETS[args.set]:
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
        for note in res.unresolved:
            print(f"   would fail: {note}")
        rows.append({"repo": repo, "sha": sha, **{k: vars(getattr(res, k)) for k in totals}})
        if args.dump:
            dump(args.dump / f"{repo.replace('/', '+')}-{sha[:9]}", res)
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
