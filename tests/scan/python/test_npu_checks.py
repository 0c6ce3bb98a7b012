"""A library's NPU check (rules/npu_checks.yaml) is imported only from a module that has it:
where the library's source is in the scanned tree, its module there must define or export
the check (mmengine #572's parent had no ``mmengine.device.is_npu_available``; the port
importing it broke ``import mmengine``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

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
    assert absent_checks([tmp_path]) == {"mmengine.device"}


def test_a_check_the_module_exports_is_used(tmp_path):
    utils = DEVICE_UTILS + "\n\n    def is_npu_available():\n        return False\n"
    target = lay_out(tmp_path, "from .utils import is_mlu_available, is_npu_available\n", utils)
    out = apply(target)
    assert "from mmengine.device import is_mlu_available, is_npu_available\n" in out
    assert absent_checks([tmp_path]) == frozenset()
