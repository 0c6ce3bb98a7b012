"""The project around a file: its package's device helpers (or where the port's go), the
torch it declares, the NPU arms it has (migrate/scan/project/)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from fix.goldens import migrate_cli
from trees import write

from migrate.scan.project import discover, package_of

HELPER = """\
    import torch

    def get_device_name():
        if torch.cuda.is_available():
            return "cuda"
        if is_npu_available():
            return "npu"
        return "cpu"

    def get_torch_device():
        name = get_device_name()
        return getattr(torch, name) if name != "cpu" else torch.cuda
    """


def context(root: Path, rels: list[str], helper: str | None = None):
    return discover([(root / r, r) for r in rels], root, helper)


def test_package_of_a_file(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/sub/m.py": "", "script.py": ""})
    top, module = package_of(tmp_path / "pkg" / "sub" / "m.py")
    assert top == tmp_path / "pkg" and module == "pkg.sub.m"
    assert package_of(tmp_path / "pkg" / "sub" / "__init__.py")[1] == "pkg.sub"
    assert package_of(tmp_path / "script.py") == (None, None)


def test_the_projects_helper_is_chosen_and_imported_from_where_the_package_exports_it(tmp_path):
    write(
        tmp_path,
        {
            "kit/__init__.py": "from kit.util.accel import get_device_name, get_torch_device\n",
            "kit/util/__init__.py": "",
            "kit/util/accel.py": HELPER,
            "kit/train.py": "import torch\ntorch.cuda.synchronize()\n",
            "pyproject.toml": '[project]\ndependencies = ["torch>=2.1"]\n',
        },
    )
    fd = context(tmp_path, ["kit/train.py"]).for_file("kit/train.py")
    assert {(h.kind, h.public, h.name) for h in fd.helpers} == {
        ("type", "kit", "get_device_name"),
        ("module", "kit", "get_torch_device"),
    }
    ref = fd.helper("type")
    assert ref.import_from("kit.train") == "kit.util.accel"  # inside: not through its __init__
    assert ref.import_from("other.mod") == "kit" and ref.import_from(None) == "kit"
    assert fd.add_path == "kit/_device.py" and fd.min_torch == (2, 1)


def test_code_beside_a_package_with_helpers_uses_them(tmp_path):
    write(
        tmp_path,
        {
            "kit/__init__.py": "",
            "kit/accel.py": HELPER,
            "recipes/__init__.py": "",
            "recipes/r.py": "import kit.accel\n",
            "tools/run.py": "from kit.accel import get_device_name\n",
            "lone.py": "import torch\n",
        },
    )
    ctx = context(tmp_path, ["recipes/r.py", "tools/run.py", "lone.py"])
    assert ctx.for_file("recipes/r.py").helper("module").describe() == "kit.accel.get_torch_device()"
    assert ctx.for_file("tools/run.py").helper("type").name == "get_device_name"
    assert ctx.for_file("lone.py").helpers == ()  # a script on its own defines the port's
    assert dict(ctx.describe())["recipes"].endswith("(imports kit)")


def test_a_package_in_a_subfolder_uses_the_helpers_of_the_package_it_imports(tmp_path):
    # verl's layout: recipe/ holds packages (recipe/prime/__init__.py, no recipe/__init__.py)
    # that import verl from the repository root
    write(
        tmp_path,
        {
            "verl/__init__.py": "",
            "verl/device.py": HELPER,
            "recipe/prime/__init__.py": "",
            "recipe/prime/workers.py": "import torch\nfrom verl.device import get_device_name\n"
            "torch.cuda.empty_cache()\n",
        },
    )
    fd = context(tmp_path, ["recipe/prime/workers.py"]).for_file("recipe/prime/workers.py")
    assert fd.package == "prime"
    assert fd.helper("module").describe() == "verl.device.get_torch_device()"
    assert fd.add_path is None or not fd.add_path.startswith("recipe/")


def test_tests_importing_several_packages_take_the_module_of_the_largest(tmp_path):
    # torchtune before its NPU port: tests/ imports `recipes` (a few files) and `torchtune`,
    # neither with helpers; the port's module goes in torchtune, and tests import it there
    files = {"tests/__init__.py": "", "recipes/__init__.py": "", "recipes/r.py": "x = 1\n"}
    files.update({"torchtune/__init__.py": "", "torchtune/a.py": "", "torchtune/b.py": ""})
    files["tests/test_device.py"] = (
        "import torch\nimport recipes.r\nimport torchtune.a\ntorch.cuda.synchronize()\n"
    )
    write(tmp_path, files)
    fd = context(tmp_path, ["tests/test_device.py"]).for_file("tests/test_device.py")
    assert fd.add_path == "torchtune/_device.py" and fd.add_module == "torchtune._device"


def test_a_configured_helper_module(tmp_path):
    write(tmp_path, {"kit/__init__.py": "", "kit/accel.py": HELPER, "kit/other.py": HELPER, "kit/m.py": ""})
    fd = context(tmp_path, ["kit/m.py"], helper="kit.other").for_file("kit/m.py")
    assert {h.module for h in fd.helpers} == {"kit.other"}
    fresh = context(tmp_path, ["kit/m.py"], helper="kit.devices").for_file("kit/m.py")
    assert fresh.helpers == () and fresh.add_module == "kit.devices"  # created there


def test_the_port_never_takes_a_file_name_that_holds_something_else(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/_device.py": "X = 1\n", "pkg/m.py": ""})
    fd = context(tmp_path, ["pkg/m.py"]).for_file("pkg/m.py")
    assert fd.add_path == "pkg/_device_helpers.py"


def test_scan_reports_the_chosen_helpers_and_apply_uses_them(tmp_path):
    write(
        tmp_path,
        {
            "kit/__init__.py": "",
            "kit/accel.py": HELPER,
            "kit/train.py": "import torch\nx = torch.ones(2).cuda()\ntorch.cuda.empty_cache()\n",
        },
    )
    r = migrate_cli(["scan", str(tmp_path), "--format", "json", "--no-cache", "--exit-zero"])
    doc = json.loads(r.stdout)
    assert doc["summary"]["device_helpers"] == [
        {"package": "kit", "helpers": "kit.accel.get_torch_device(), kit.accel.get_device_name()"}
    ]
    text = migrate_cli(["scan", str(tmp_path), "--no-cache", "--exit-zero"]).stdout
    assert "Device helpers" in text and "kit.accel.get_torch_device()" in text
    assert migrate_cli(["apply", str(tmp_path), "--no-cache"]).exit_code == 0
    out = (tmp_path / "kit" / "train.py").read_text()
    assert out == (
        "import torch\n\nfrom kit.accel import get_device_name, get_torch_device\n"
        "x = torch.ones(2).to(get_device_name())\nget_torch_device().empty_cache()\n"
    )
    assert not (tmp_path / "kit" / "_device.py").exists()  # no second helper
    assert (tmp_path / "kit" / "accel.py").read_text() == textwrap.dedent(HELPER)  # left alone


def test_npu_inside_a_word_is_not_an_npu_arm(tmp_path):
    """The word "input" holds "npu": a package of model code full of inputs has no NPU arm and no
    file worth parsing for helpers; `is_npu_available` and `NPUAccelerator` are arms."""
    write(
        tmp_path,
        {
            "m/__init__.py": "",
            "m/model.py": "def get_input_embeddings(inputs):\n    return inputs\n\n\nINPUT_NAMES = []\n",
            "m/accel.py": "def is_npu_available():\n    return False\n\n\nclass NPUAccelerator:\n    pass\n",
        },
    )
    fd = context(tmp_path, ["m/model.py"]).for_file("m/model.py")
    assert set(fd.npu_arms) == {"is_npu_available", "NPUAccelerator"}
