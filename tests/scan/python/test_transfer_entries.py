"""--target transfer on projects laid out in a folder: which files are entry points (they get
transfer_to_npu, MIG206), which are modules imported by one (patched through it), and which
cannot be judged (MIG207: their CUDA uses are not counted as patched)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from fix.goldens import migrate_cli

IMPORT = "from torch_npu.contrib import transfer_to_npu  # noqa: F401"

LIB = """\
    import torch


    def run_experiment(model, steps):
        for _ in range(steps):
            model(torch.randn(8, 4).cuda()).sum().backward()
    """
# torchrun scripts without a __main__ block: the work is a call at module level of a
# function imported from elsewhere, or argparse at module level
CALLS_IMPORTED = """\
    import torch

    from lib import run_experiment

    model = torch.nn.Linear(4, 2).cuda()
    run_experiment(model, steps=3)
    """
ARGPARSE = """\
    import argparse

    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1)
    args = parser.parse_args()
    device = torch.device("cuda")
    """
DEFS_ONLY = """\
    import torch


    def step(model):
        return model(torch.ones(2).cuda())
    """


def lay(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).write_text(textwrap.dedent(text))


def scan(root: Path) -> list[dict]:
    out = root.parent / f"{root.name}.json"
    args = ["scan", str(root), "--no-cache", "--exit-zero", "--target", "transfer"]
    result = migrate_cli([*args, "--format", "json", "-o", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())["findings"]


def by_file(found: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in found:
        out.setdefault(Path(f["path"]).name, []).append(f)
    return out


def test_entry_scripts_without_a_main_block_get_the_import(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    lay(root, {"lib.py": LIB, "train.py": CALLS_IMPORTED, "cli.py": ARGPARSE})
    files = by_file(scan(root))
    assert [f["rule"] for f in files["train.py"] if f["rule"] == "MIG206"] == ["MIG206"]
    assert [f["rule"] for f in files["cli.py"] if f["rule"] == "MIG206"] == ["MIG206"]
    # lib.py is imported by train.py: a module, patched through the entry point's import
    assert all(f["rule"] not in ("MIG206", "MIG207") for f in files["lib.py"])
    assert files["lib.py"] and all(f["npu_aware"] for f in files["lib.py"])

    result = migrate_cli(["apply", "--target", "transfer", str(root), "--no-cache"])
    assert result.exit_code == 0, result.output
    for name in ("train.py", "cli.py"):
        assert (root / name).read_text().count(IMPORT) == 1, name
    assert "transfer_to_npu" not in (root / "lib.py").read_text()
    assert (root / "train.py").read_text().startswith("import torch\n" + IMPORT + "\n")


def test_a_script_that_cannot_be_judged_is_reported_not_patched(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    lay(
        root,
        {"tools.py": DEFS_ONLY, "imported.py": DEFS_ONLY, "main.py": "import imported\nimported.step(1)\n"},
    )
    files = by_file(scan(root))
    tools = files["tools.py"]
    undecided = [f for f in tools if f["rule"] == "MIG207"]
    assert len(undecided) == 1 and "not counted as patched" in undecided[0]["message"]
    cuda = [f for f in tools if f["rule"] == "MIG202"]
    assert cuda and all(not f["npu_aware"] for f in cuda)
    # the same code imported by a program of the project: patched through it
    assert files["imported.py"] and all(f["npu_aware"] for f in files["imported.py"])
    assert "MIG207" not in {f["rule"] for f in files["imported.py"]}
    # the unsafe fix adds the import, and the next scan counts the file handled
    result = migrate_cli(["apply", "--target", "transfer", "--unsafe-fixes", str(root), "--no-cache"])
    assert result.exit_code == 0, result.output
    assert (root / "tools.py").read_text().count(IMPORT) == 1
    assert "MIG207" not in {f["rule"] for f in scan(root)}


def test_packaging_and_test_configuration_are_not_programs(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    lay(root, {"conftest.py": DEFS_ONLY, "setup.py": "from setuptools import setup\n\nsetup(name='x')\n"})
    rules = {f["rule"] for f in scan(root)}
    assert not rules & {"MIG206", "MIG207"}
