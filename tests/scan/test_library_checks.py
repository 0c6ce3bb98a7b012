"""Whether the scanned tree's copy of a library defines or exports its NPU check
(rules/npu_checks.yaml): read from the library's source, never imported."""

from __future__ import annotations

from pathlib import Path

from migrate.scan.library_checks import absent_checks

CHECK = "def is_npu_available():\n    return False\n"


def lay_out(root: Path, init: str, utils: str = "") -> None:
    device = root / "mmengine" / "device"
    device.mkdir(parents=True, exist_ok=True)
    (root / "mmengine" / "__init__.py").write_text("")
    (device / "__init__.py").write_text(init)
    (device / "utils.py").write_text("def is_mlu_available():\n    return False\n" + utils)


def test_defined_or_imported_in_the_module(tmp_path):
    lay_out(tmp_path, CHECK)
    assert absent_checks([tmp_path]) == frozenset()
    lay_out(tmp_path, "from .utils import is_mlu_available, is_npu_available\n", CHECK)
    assert absent_checks([tmp_path]) == frozenset()


def test_exported_through_a_star_import_or_a_lazy_structure(tmp_path):
    lay_out(tmp_path, "from .utils import *\n", CHECK)
    assert absent_checks([tmp_path]) == frozenset()
    lay_out(tmp_path, "_import_structure = {'utils': ['is_npu_available']}\n")
    assert absent_checks([tmp_path]) == frozenset()


def test_missing_from_the_module(tmp_path):
    lay_out(tmp_path, "from .utils import is_mlu_available\n")
    assert absent_checks([tmp_path]) == {"mmengine.device"}
    lay_out(tmp_path, "from .utils import *\n")  # the star module has no such function
    assert absent_checks([tmp_path]) == {"mmengine.device"}


def test_found_in_a_parent_folder_or_under_src(tmp_path):
    lay_out(tmp_path / "src", "from .utils import is_mlu_available\n")
    (tmp_path / "tools").mkdir()
    assert absent_checks([tmp_path / "tools", tmp_path]) == {"mmengine.device"}


def test_a_library_not_in_the_tree_is_not_judged(tmp_path):
    (tmp_path / "train.py").write_text("import torch\n")
    assert absent_checks([tmp_path]) == frozenset()
