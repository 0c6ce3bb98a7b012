"""The package-facts cache (migrate/scan/project_cache.py): a warm scan reuses what helper
discovery learnt from a package while its files are unchanged, and trusts nothing it reads."""

from __future__ import annotations

import inspect
import json
import os
import sys
from pathlib import Path

import pytest
from test_project import HELPER, write

from migrate.scan.project import _facts_from_data, discover, package_of
from migrate.scan.project.facts import _facts_data

FILES = {
    "kit/__init__.py": "from kit.util.accel import get_device_name, get_torch_device\n",
    "kit/util/__init__.py": "",
    "kit/util/accel.py": HELPER,
    "kit/train.py": "import torch\ntorch.cuda.synchronize()\n",
}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("MIGRATE_CACHE_KEY", "k" * 40)


def context(root: Path, cache: Path):
    rels = sorted(str(p.relative_to(root)) for p in root.rglob("*.py"))
    return discover([(root / r, r) for r in rels], root, None, cache)


def helpers(ctx) -> list[str]:
    return sorted(h.describe() for h in ctx.for_file("kit/train.py").helpers)


BOTH = ["kit.get_device_name()", "kit.get_torch_device()"]


def cache_file(cache: Path) -> Path:
    (found,) = cache.glob("project-*.json")
    return found


def test_a_warm_run_reuses_the_facts_and_gives_the_same_context(tmp_path, monkeypatch):
    root, cache = tmp_path / "src", tmp_path / "cache"
    write(root, FILES)
    cold = context(root, cache)
    assert helpers(cold) == BOTH
    import migrate.scan.project.discovery as discovery

    def no_reading(*args):
        raise AssertionError("a warm run read the package again")

    monkeypatch.setattr(discovery, "_package_facts", no_reading)
    warm = context(root, cache)
    assert warm.key() == cold.key()


def test_a_changed_file_is_read_again(tmp_path):
    root, cache = tmp_path / "src", tmp_path / "cache"
    write(root, {**FILES, "kit/util/accel.py": "import torch\n"})
    assert helpers(context(root, cache)) == []
    write(root, {"kit/util/accel.py": HELPER})
    assert helpers(context(root, cache)) == BOTH


def test_an_added_file_is_seen(tmp_path):
    root, cache = tmp_path / "src", tmp_path / "cache"
    write(root, {k: v for k, v in FILES.items() if k != "kit/util/accel.py"})
    assert helpers(context(root, cache)) == []
    write(root, {"kit/util/accel.py": HELPER})
    assert helpers(context(root, cache)) == BOTH


def test_facts_edited_in_the_cache_are_not_believed(tmp_path):
    root, cache = tmp_path / "src", tmp_path / "cache"
    write(root, FILES)
    context(root, cache)
    path = cache_file(cache)
    doc = json.loads(path.read_text())
    (entry,) = doc["entries"].values()
    entry["facts"]["helpers"][0]["name"] = "evil"
    path.write_text(json.dumps(doc))
    assert helpers(context(root, cache)) == BOTH


def test_a_cache_written_under_another_key_is_not_believed(tmp_path, monkeypatch):
    root, cache = tmp_path / "src", tmp_path / "cache"
    write(root, {**FILES, "kit/util/accel.py": "import torch\n"})
    monkeypatch.setenv("MIGRATE_CACHE_KEY", "x" * 40)
    context(root, cache)
    doc = json.loads(cache_file(cache).read_text())
    (entry,) = doc["entries"].values()
    entry["facts"]["helpers"] = [
        {"kind": "type", "module": "kit.evil", "name": "boom", "call": True, "ours": False, "publics": []}
    ]
    from migrate.scan.cache import mac_of
    from migrate.scan.project_cache import FactsCache

    attacker = FactsCache.open(cache, None)  # forged with the other key
    entry["mac"] = mac_of(
        attacker.key,
        attacker.binding,
        os.path.realpath(root / "kit") + "\0" + entry["signature"],
        entry["facts"],
    )
    cache_file(cache).write_text(json.dumps(doc))
    monkeypatch.setenv("MIGRATE_CACHE_KEY", "k" * 40)
    assert helpers(context(root, cache)) == []


# facts of a package with nothing to say: each refused case below breaks one field of it
GOOD_FACTS = {
    "helpers": [],
    "npu_arms": [],
    "uses": [],
    "relative_imports": False,
    "run_by_path": [],
    "checks": [],
}


@pytest.mark.parametrize(
    "data",
    [
        {
            "helpers": [
                {"kind": "type", "module": "a;b", "name": "f", "call": True, "ours": False, "publics": []}
            ],
            "npu_arms": [],
            "uses": [],
            "relative_imports": False,
            "run_by_path": [],
        },
        {
            "helpers": [
                {"kind": "nope", "module": "a", "name": "f", "call": True, "ours": False, "publics": []}
            ],
            "npu_arms": [],
            "uses": [],
            "relative_imports": False,
            "run_by_path": [],
        },
        {
            "helpers": [
                {"kind": "type", "module": "a", "name": "f()", "call": True, "ours": False, "publics": []}
            ],
            "npu_arms": [],
            "uses": [],
            "relative_imports": False,
            "run_by_path": [],
        },
        {
            "helpers": [
                {"kind": "type", "module": "a", "name": "f", "call": 1, "ours": False, "publics": []}
            ],
            "npu_arms": [],
            "uses": [],
            "relative_imports": False,
            "run_by_path": [],
        },
        {"helpers": [], "npu_arms": "abc", "uses": [], "relative_imports": False, "run_by_path": []},
        {"helpers": [], "npu_arms": [], "uses": ["x y"], "relative_imports": False, "run_by_path": []},
        {"helpers": {}, "npu_arms": [], "uses": [], "relative_imports": False, "run_by_path": []},
        {"helpers": [], "npu_arms": [], "relative_imports": False, "run_by_path": []},
        {"helpers": [], "npu_arms": [], "uses": [], "relative_imports": "yes", "run_by_path": []},
        {"helpers": [], "npu_arms": [], "uses": []},
        {"helpers": [7], "npu_arms": [], "uses": [], "relative_imports": False, "run_by_path": []},
        {"helpers": [], "npu_arms": [], "uses": [], "relative_imports": False, "run_by_path": ["../x.py"]},
        {"helpers": [], "npu_arms": [], "uses": [], "relative_imports": False},
    ],
)
def test_facts_of_the_wrong_shape_are_refused(data):
    assert _facts_from_data({"checks": [], **data}) is None
    good = dict(GOOD_FACTS)
    assert _facts_from_data(good) is not None  # each case above breaks one field of this


def test_facts_cached_before_checks_were_gathered_are_found_again():
    """Not read as "the package imports no check": that would keep the old port."""
    old = {"helpers": [], "npu_arms": [], "uses": [], "relative_imports": False, "run_by_path": []}
    assert _facts_from_data(old) is None
    assert _facts_from_data({**old, "checks": []}) is not None


def test_facts_round_trip():
    data = {
        "helpers": [
            {"kind": "type", "module": "a.b", "name": "f", "call": True, "ours": False, "publics": ["a"]}
        ],
        "npu_arms": ["NPU_Accelerator"],
        "uses": ["torch"],
        "relative_imports": True,
        "run_by_path": ["tools/run.py"],
        "family": {
            "module": "a.device.utils",
            "rel": "a/device/utils.py",
            "name": "is_npu_available",
            "defined": False,
            "anchor": "is_cuda_available",
            "publics": ["a.device"],
        },
        "checks": [],
    }
    helpers_, arms, uses, relative, alone, family, checks = _facts_from_data(data)
    assert relative is True and alone == {"tools/run.py"} and checks == ()
    assert helpers_[0].describe() == "a.f()" and arms == {"NPU_Accelerator"} and uses == {"torch"}
    assert family.publics == ("a.device",) and family.name == "is_npu_available"
    assert _facts_data(_facts_from_data(data)) == data


@pytest.mark.parametrize(
    "family",
    [
        {"module": "a", "rel": "../x.py", "name": "n", "defined": False, "anchor": "a", "publics": []},
        {"module": "a b", "rel": "a.py", "name": "n", "defined": False, "anchor": "a", "publics": []},
        {"module": "a", "rel": "a.py", "name": "n()", "defined": False, "anchor": "a", "publics": []},
        {"module": "a", "rel": "a.py", "name": "n", "defined": "no", "anchor": "a", "publics": []},
        {"module": "a", "rel": "a.py", "name": "n", "defined": False, "anchor": "a", "publics": "a"},
        ["a"],
    ],
)
def test_a_family_of_the_wrong_shape_is_refused(family):
    good = dict(GOOD_FACTS)
    assert _facts_from_data({**good, "family": family}) is None


def test_a_corrupt_or_huge_cache_file_starts_afresh(tmp_path, capsys):
    root, cache = tmp_path / "src", tmp_path / "cache"
    write(root, FILES)
    context(root, cache)
    cache_file(cache).write_bytes(b"{" * 100000)
    assert helpers(context(root, cache)) == BOTH
    assert f"migrate: note: cache file {cache_file(cache)}: not JSON" in capsys.readouterr().err


def test_package_of_remembers_folders_and_keeps_its_answers(tmp_path):
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "",
            "pkg/sub/m.py": "",
            "pkg/a-b/__init__.py": "",
            "pkg/a-b/m.py": "",
        },
    )
    known: dict = {}
    assert package_of(tmp_path / "pkg/sub/m.py", known) == (tmp_path / "pkg", "pkg.sub.m")
    assert package_of(tmp_path / "pkg/sub/__init__.py", known) == (tmp_path / "pkg", "pkg.sub")
    assert package_of(tmp_path / "pkg/a-b/m.py", known) == (None, None)
    assert package_of(tmp_path / "pkg/sub/m.py", known) == (tmp_path / "pkg", "pkg.sub.m")


def test_package_of_a_package_nested_deeper_than_the_recursion_limit(tmp_path):
    folder = tmp_path
    for _ in range(150):
        folder = folder / "p"
        folder.mkdir()
        (folder / "__init__.py").write_text("")
    # a recursive walk up 150 folders would need more frames than this leaves
    depth = len(inspect.stack(0))
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 60)
    try:
        top, module = package_of(folder / "m.py")
    finally:
        sys.setrecursionlimit(old)
    assert top == tmp_path / "p" and module == ".".join(["p"] * 150 + ["m"])


def _big_package(root: Path) -> None:
    files = {
        f"kit/m{i}.py": f"import os\nimport torch\nfrom kit.util.accel import get_device_name\nX = {i}\n"
        for i in range(260)
    }
    other = HELPER.replace("get_device_name", "pick_device").replace("get_torch_device", "pick_module")
    write(root, {**FILES, **files, "kit/other.py": other})


def test_a_large_package_read_by_workers_gives_the_same_context(tmp_path):
    _big_package(tmp_path)
    rels = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.py"))
    pairs = [(tmp_path / r, r) for r in rels]
    alone = discover(pairs, tmp_path, None, None, 1)
    workers = discover(pairs, tmp_path, None, None, 2)
    assert workers.key() == alone.key()
    # two type helpers: the one more files name wins (get_device_name, imported by 260 files)
    assert sorted(h.describe() for h in workers.for_file("kit/m1.py").helpers) == BOTH
