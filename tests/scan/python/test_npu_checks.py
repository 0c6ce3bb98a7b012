"""A library's NPU check (rules/npu_checks.yaml) is imported only from a module that has it:
where the library's source is in the scanned tree, its module there must define or export
the check (mmengine #572's parent had no ``mmengine.device.is_npu_available``; the port
importing it broke ``import mmengine``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from migrate.cli import app
from migrate.scan.library_checks import absent_checks

# mmengine/dist/utils.py before #572, reduced: imports another check of mmengine.device
DIST_UTILS = """\
    import torch
    from mmengine.device import is_mlu_available


    def get_comm_device():
        if is_mlu_available():
            return torch.device('mlu', torch.mlu.current_device())
        if torch.cuda.is_available():
            return torch.device('cuda', torch.cuda.current_device())
        return torch.device('cpu')
    """

DEVICE_UTILS = """\
    import torch


    def is_mlu_available():
        return hasattr(torch, 'is_mlu_available') and torch.is_mlu_available()
    """


def lay_out(root: Path, device_init: str, device_utils: str = DEVICE_UTILS) -> Path:
    pkg = root / "mmengine"
    for folder in (pkg, pkg / "device", pkg / "dist"):
        folder.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "device" / "__init__.py").write_text(textwrap.dedent(device_init))
    (pkg / "device" / "utils.py").write_text(textwrap.dedent(device_utils))
    (pkg / "dist" / "__init__.py").write_text("")
    (pkg / "dist" / "utils.py").write_text(textwrap.dedent(DIST_UTILS))
    return pkg / "dist" / "utils.py"


def apply(path: Path) -> str:
    result = CliRunner().invoke(app, ["apply", str(path), "--no-cache", "--no-progress"])
    assert result.exit_code in (0, 1), result.output
    return path.read_text()


def test_a_check_the_librarys_module_lacks_is_not_imported(tmp_path):
    target = lay_out(tmp_path, "from .utils import is_mlu_available\n")
    out = apply(target)
    assert out != textwrap.dedent(DIST_UTILS)  # ported
    assert "import is_npu_available" not in out and ", is_npu_available" not in out
    assert "from mmengine.device import is_mlu_available\n" in out
    assert "mmengine.device" in absent_checks([tmp_path])


def test_a_check_the_module_exports_is_used(tmp_path):
    utils = DEVICE_UTILS + "\n\n    def is_npu_available():\n        return False\n"
    target = lay_out(tmp_path, "from .utils import is_mlu_available, is_npu_available\n", utils)
    out = apply(target)
    assert "from mmengine.device import is_mlu_available, is_npu_available\n" in out
    assert "mmengine.device" not in absent_checks([tmp_path])


# ms-swift's swift/llm/utils/argument.py before #528, reduced: transformers is a dependency
# it imports (another module of it), and the installed transformers has the check
ARGUMENT = """\
    import torch
    from transformers.utils.versions import require_version


    def select_dtype(dtype):
        if not torch.cuda.is_available():
            return 'fp32', require_version
        return dtype
    """


def test_a_dependency_the_file_imports_elsewhere_gives_its_check_from_its_module():
    from porting import port

    out = port(ARGUMENT)
    assert "from transformers.utils import is_torch_npu_available\n" in out
    assert "    if not (torch.cuda.is_available() or is_torch_npu_available()):\n" in out
    assert port(out) == out


MMENGINE_USER = """\
    import torch
    from mmengine.config import Config


    def f():
        return torch.cuda.device_count(), Config
    """


def test_a_dependency_whose_installed_copy_lacks_the_check_gives_none(tmp_path, monkeypatch):
    from porting import port

    from migrate.scan import library_checks

    site = tmp_path / "site"
    lay_out(site, "from .utils import is_mlu_available\n")  # mmengine before #572
    monkeypatch.syspath_prepend(str(site))
    for memo in (library_checks._installed, library_checks.installed_exports):
        memo.cache_clear()
    try:
        out = port(MMENGINE_USER)
    finally:
        for memo in (library_checks._installed, library_checks.installed_exports):
            memo.cache_clear()
    assert "mmengine.device" not in out and "is_npu_available" in out  # the port's own check


@pytest.mark.parametrize(
    "binding",
    [
        "from .import_utils import is_npu_available, is_xpu_available",  # trl, run in its package
        "from trl.import_utils import is_npu_available, is_xpu_available",  # trl not installed
        "from .import_utils import is_xpu_available\nfrom .other import is_npu_available",
    ],
)
def test_an_npu_check_the_file_already_imports_is_used_not_defined_again(binding):
    """trl's core.py, ported alone: it imports `is_npu_available` itself. Defining the port's
    own below it shadowed the import (ruff F811) and pasted a second check."""
    from porting import port

    code = textwrap.dedent("""\
        import gc

        import torch

        BINDING


        def empty_device_cache(optimize):
            if is_xpu_available():
                torch.xpu.empty_cache()
            else:
                if optimize and torch.cuda.is_available():
                    gc.collect()
                    torch.cuda.empty_cache()
        """).replace("BINDING", binding)
    out = port(code)
    assert "def is_npu_available" not in out and "def get_device_type" not in out
    # the innermost CUDA arm gets the twin (ComfyUI's chains nest a vendor chain in an else)
    assert "        elif optimize and is_npu_available():\n            gc.collect()\n" in out
    assert port(out) == out
