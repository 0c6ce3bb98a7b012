"""The project's family of device checks gains the NPU's member, its packages export it, and
the files importing from there test with it (rule MIG208, migrate/scan/python/kinds/
check_family.py; npu_checks.family_check): mmengine #572's and diffusers #7144's shapes, run
after the port."""

from __future__ import annotations

import textwrap

import pytest
from family_trees import DIFFUSERS, FAMILY, MMENGINE, apply
from family_trees import run_in as _imports
from running import python_in
from trees import write
from typer.testing import CliRunner

from migrate.cli import app


def test_mmengine_gets_is_npu_available_where_its_engineers_put_it(tmp_path):
    write(tmp_path, MMENGINE)
    apply(tmp_path / "mmengine")
    pkg = tmp_path / "mmengine"
    utils = (pkg / "device" / "utils.py").read_text()
    assert "return torch.cuda.is_available()\n\n\ndef is_npu_available() -> bool:\n" in utils
    # get_device's chain asks the family: without an NPU arm it says 'cpu' on an NPU host
    assert (
        "        return 'mlu'\n    elif is_npu_available():\n        return 'npu'\n    return 'cpu'\n"
        in utils
    )
    init = (pkg / "device" / "__init__.py").read_text()
    assert "is_mlu_available, is_mps_available, is_npu_available)" in init
    assert "'is_mlu_available', 'is_mps_available', 'is_npu_available'\n]" in init
    dist = (pkg / "dist" / "utils.py").read_text()
    assert "from mmengine.device import is_mlu_available, is_npu_available\n" in dist
    assert "    elif is_npu_available():\n        num_gpus = torch.npu.device_count()\n" in dist
    assert "_device.py" not in {p.name for p in pkg.iterdir()}  # no second helper module
    before = {p: p.read_text() for p in pkg.rglob("*.py")}
    apply(tmp_path / "mmengine")
    assert {p: p.read_text() for p in pkg.rglob("*.py")} == before  # a second run: nothing
    code = "import mmengine.dist.utils as u, mmengine.device as d; u.sync()"
    code += "; print(d.is_npu_available(), d.get_device())"
    done = python_in(tmp_path, code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False cpu"  # no torch_npu, no GPU here: as before


def test_diffusers_gets_is_torch_npu_available_in_its_import_utils(tmp_path):
    write(tmp_path, DIFFUSERS)
    apply(tmp_path / "src")
    pkg = tmp_path / "src" / "diffusers"
    utils = (pkg / "utils" / "import_utils.py").read_text()
    assert "def is_torch_npu_available() -> bool:" in utils
    assert "    try:\n        import torch\n    except ImportError:\n        return False\n" in utils
    assert utils.index("def is_torch_xla_available") < utils.index("def is_torch_npu_available")
    init = (pkg / "utils" / "__init__.py").read_text()
    assert "    is_torch_available,\n    is_torch_npu_available,\n    is_torch_xla_available,\n)" in init
    training = (pkg / "training_utils.py").read_text()
    assert "    is_torch_available,\n    is_torch_npu_available,\n)" in training
    # bound once: the call inline would pass the file's 79 columns (fix/hoist.py)
    assert "    torch_device = torch.npu if is_torch_npu_available() else torch.cuda\n" in training
    assert "    torch_device.manual_seed_all(seed)\n" in training
    done = python_in(tmp_path / "src", "import diffusers.training_utils as t; t.set_seed(0)")
    assert done.returncode == 0, done.stderr


def test_a_family_module_not_ported_is_not_imported_from(tmp_path):
    """Only dist/utils.py is ported: mmengine.device keeps lacking the check, so the port
    must not import it from there."""
    write(tmp_path, MMENGINE)
    apply(tmp_path / "mmengine" / "dist" / "utils.py")
    dist = (tmp_path / "mmengine" / "dist" / "utils.py").read_text()
    assert "is_npu_available" not in dist.split("\n\n")[0]  # not in its imports
    assert "is_npu_available" not in (tmp_path / "mmengine" / "device" / "utils.py").read_text()


def test_a_family_module_handed_over_alone_gets_its_member(tmp_path):
    write(tmp_path, {"utils.py": MMENGINE["mmengine/device/utils.py"]})
    apply(tmp_path / "utils.py")
    text = (tmp_path / "utils.py").read_text()
    assert text.count("def is_npu_available") == 1
    assert "torch_device = torch.npu if is_npu_available() else torch.cuda" in text


def test_a_module_of_the_exporting_package_imports_from_the_family_module(tmp_path):
    """diffusers/utils/torch_utils.py: `from . import logging` is its own package's __init__,
    which imports it (a name added there is not bound yet): the check joins its import of
    import_utils instead, as #11617's engineers wrote."""
    files = dict(DIFFUSERS)
    files["src/diffusers/utils/logging.py"] = ""
    files["src/diffusers/utils/torch_utils.py"] = """\
        import torch

        from . import logging
        from .import_utils import is_torch_available


        def get_device():
            if torch.cuda.is_available():
                return "cuda"
            else:
                return "cpu"
        """
    write(tmp_path, files)
    apply(tmp_path / "src")
    text = (tmp_path / "src" / "diffusers" / "utils" / "torch_utils.py").read_text()
    assert (
        "from . import logging\nfrom .import_utils import is_torch_available, is_torch_npu_available\n"
        in text
    )
    assert '    elif is_torch_npu_available():\n        return "npu"\n' in text


def test_a_family_module_importing_torch_only_in_functions_gets_the_guarded_member(tmp_path):
    """trl/import_utils.py before its NPU port: torch is imported inside is_xpu_available."""
    text = """\
        import importlib


        def is_xpu_available() -> bool:
            import torch

            return hasattr(torch, "xpu") and torch.xpu.is_available()
        """
    write(tmp_path, {"import_utils.py": text})
    apply(tmp_path / "import_utils.py")
    out = (tmp_path / "import_utils.py").read_text()
    assert "def is_npu_available() -> bool:" in out
    assert "    try:\n        import torch\n    except ImportError:\n        return False\n" in out
    scope: dict = {}
    exec(compile(out, "import_utils.py", "exec"), scope)  # noqa: S102 - the port of a test input
    assert scope["is_npu_available"]() is False


def test_a_chain_asking_the_imported_cuda_member_gets_the_npu_arm(tmp_path):
    files = dict(MMENGINE)
    files["mmengine/runner/__init__.py"] = ""
    files["mmengine/runner/pick.py"] = """\
        from mmengine.device import is_cuda_available


        def pick():
            if is_cuda_available():
                device = 'cuda'
            else:
                device = 'cpu'
            return device
        """
    write(tmp_path, files)
    apply(tmp_path / "mmengine")
    text = (tmp_path / "mmengine" / "runner" / "pick.py").read_text()
    assert text.startswith("from mmengine.device import is_cuda_available, is_npu_available\n")
    assert (
        "    if is_cuda_available():\n        device = 'cuda'\n"
        "    elif is_npu_available():\n        device = 'npu'\n    else:\n"
    ) in text


def test_the_member_goes_after_a_comment_closing_the_anchor_and_keeps_crlf(tmp_path):
    text = (
        "import torch\r\n\r\n\r\ndef is_cuda_available():\r\n"
        "    return torch.cuda.is_available()  # noqa: TID251\r\n\r\n\r\n"
        "def is_mlu_available():\r\n    return False\r\n"
    )
    (tmp_path / "utils.py").write_bytes(text.encode())
    apply(tmp_path / "utils.py")
    out = (tmp_path / "utils.py").read_bytes().decode()
    assert "is_available()  # noqa: TID251\r\n\r\n\r\ndef is_npu_available() -> bool:\r\n" in out
    assert "\n" not in out.replace("\r\n", "")  # every line break is the file's
    assert "npu.is_available()\r\n\r\n\r\ndef is_mlu_available():" in out


def test_a_family_module_with_all_lists_the_member_for_star_imports(tmp_path):
    text = """\
        import torch

        __all__ = [
            "is_cuda_available",
            "is_xpu_available",
        ]


        def is_cuda_available():
            return torch.cuda.is_available()


        def is_xpu_available():
            return False
        """
    write(tmp_path, {"pkg/__init__.py": "from .utils import *\n", "pkg/utils.py": text})
    apply(tmp_path / "pkg")
    out = (tmp_path / "pkg" / "utils.py").read_text()
    assert '    "is_cuda_available",\n    "is_npu_available",\n    "is_xpu_available",\n]' in out
    done = python_in(tmp_path, "from pkg import is_npu_available; print(is_npu_available())")
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr


def test_a_script_beside_the_package_tests_with_the_family_it_imports_from(tmp_path):
    """diffusers #7916: examples/train_text_to_image_sdxl.py imports
    diffusers.utils.import_utils, which has the check: the engineers imported it there."""
    files = dict(DIFFUSERS)
    more = "\n\ndef is_torch_npu_available():\n    return False\n"
    utils = textwrap.dedent(files["src/diffusers/utils/import_utils.py"])
    files["src/diffusers/utils/import_utils.py"] = utils + more + more.replace("torch_npu", "xformers")
    files["examples/train.py"] = """\
        import torch
        from diffusers.utils.import_utils import is_xformers_available


        def main():
            torch.cuda.empty_cache()
        """
    write(tmp_path, files)
    apply(tmp_path)
    text = (tmp_path / "examples" / "train.py").read_text()
    # joined to that import (wrapped: 88 columns, where the file's lines reach 79)
    assert "import (\n    is_torch_npu_available,\n    is_xformers_available,\n)\n" in text
    assert "(torch.npu if is_torch_npu_available() else torch.cuda).empty_cache()" in text


def test_the_scan_says_which_family_check_the_port_tests_with(tmp_path):
    write(tmp_path, MMENGINE)
    result = CliRunner().invoke(app, ["scan", str(tmp_path / "mmengine"), "--no-cache", "--no-progress"])
    assert "mmengine.device.utils.is_npu_available(), added beside is_cuda_available() where imported" in (
        result.output
    )


USER = """\
    from pkg import is_cuda_available


    def pick():
        if is_cuda_available():
            return "cuda"
        return "cpu"
    """


def test_a_family_module_binding_the_npu_name_otherwise_is_left_as_it_is(tmp_path):
    """`is_npu_available = False` after the family: a member added after is_cuda_available
    was shadowed by it, and the user's new `elif is_npu_available():` called a bool."""
    utils = FAMILY + "\n\nis_npu_available = False\n"
    write(
        tmp_path,
        {"pkg/__init__.py": "from .utils import is_cuda_available\n", "pkg/utils.py": utils, "run.py": USER},
    )
    apply(tmp_path)
    assert (tmp_path / "pkg" / "utils.py").read_text() == utils
    assert "is_npu_available" not in (tmp_path / "run.py").read_text()
    assert _imports(tmp_path, "import run; print(run.pick())") == "cpu"


@pytest.mark.parametrize(
    "init",
    [
        "try:\n    from .utils import is_cuda_available, is_mlu_available\nexcept ImportError:\n    pass\n",
        "from .utils import is_mlu_available, \\\n    is_cuda_available\n",
        "\ufefffrom .utils import is_cuda_available\n",
    ],
)
def test_a_package_exporting_the_anchor_in_any_shape_exports_the_member_its_users_import(tmp_path, init):
    """The package counts as exporting the family where the rule finds the anchor's import
    (under a `try:` too), and adds the member there or, where it cannot join the import
    (a backslash), in a statement of its own: the users importing it from there import."""
    write(tmp_path, {"pkg/__init__.py": init, "pkg/utils.py": FAMILY, "run.py": USER})
    apply(tmp_path)
    assert "from pkg import is_cuda_available, is_npu_available\n" in (tmp_path / "run.py").read_text()
    assert _imports(tmp_path, "import run; print(run.pick())") == "cpu"
    before = (tmp_path / "pkg" / "__init__.py").read_bytes()
    assert before.count(b"is_npu_available") == 1
    apply(tmp_path)
    assert (tmp_path / "pkg" / "__init__.py").read_bytes() == before


def test_a_package_importing_the_anchor_only_in_a_function_does_not_export_it(tmp_path):
    """A lazy `__getattr__` answering every name with is_cuda_available: importing the
    member from there would get the CUDA check."""
    init = (
        "def __getattr__(name):\n    from .utils import is_cuda_available\n\n    return is_cuda_available\n"
    )
    write(tmp_path, {"pkg/__init__.py": init, "pkg/utils.py": FAMILY, "run.py": USER})
    apply(tmp_path)
    assert "is_npu_available" not in (tmp_path / "run.py").read_text()


def test_the_member_goes_after_the_anchors_last_definition_and_its_comments_two_lines_clear(tmp_path):
    """After @overload stubs it split them from their implementation; a statement right
    below the anchor (`X = 2`) ran into it, and the anchor's indented comment moved under it."""
    text = """\
        from typing import overload

        import torch


        def is_mlu_available():
            return False


        @overload
        def is_cuda_available() -> bool: ...
        @overload
        def is_cuda_available(index: int) -> bool: ...
        def is_cuda_available(index=None):
            return torch.cuda.is_available()
            # index: unused
        X = 2
        """
    write(tmp_path, {"utils.py": text})
    apply(tmp_path / "utils.py")
    out = (tmp_path / "utils.py").read_text()
    assert "    # index: unused\n\n\ndef is_npu_available() -> bool:\n" in out
    assert out.endswith("    return npu is not None and npu.is_available()\n\n\nX = 2\n")
