"""Whether the scanned tree's copy of a library defines or exports its NPU check
(rules/npu_checks.yaml): read from the library's source, never imported."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from migrate.scan import library_checks
from migrate.scan.library_checks import absent_checks

CHECK = "def is_npu_available():\n    return False\n"


def lacks(folders: list[Path]) -> bool:
    """Whether mmengine's copy found from ``folders`` lacks ``mmengine.device.is_npu_available``."""
    return "mmengine.device" in absent_checks(folders)


def lay_out(root: Path, init: str, utils: str = "") -> None:
    device = root / "mmengine" / "device"
    device.mkdir(parents=True, exist_ok=True)
    (root / "mmengine" / "__init__.py").write_text("")
    (device / "__init__.py").write_text(init)
    (device / "utils.py").write_text("def is_mlu_available():\n    return False\n" + utils)


def test_defined_or_imported_in_the_module(tmp_path):
    lay_out(tmp_path, CHECK)
    assert not lacks([tmp_path])
    lay_out(tmp_path, "from .utils import is_mlu_available, is_npu_available\n", CHECK)
    assert not lacks([tmp_path])


def test_exported_through_a_star_import_or_a_lazy_structure(tmp_path):
    lay_out(tmp_path, "from .utils import *\n", CHECK)
    assert not lacks([tmp_path])
    lay_out(tmp_path, "_import_structure = {'utils': ['is_npu_available']}\n")
    assert not lacks([tmp_path])


def test_missing_from_the_module(tmp_path):
    lay_out(tmp_path, "from .utils import is_mlu_available\n")
    assert lacks([tmp_path])
    lay_out(tmp_path, "from .utils import *\n")  # the star module has no such function
    assert lacks([tmp_path])


def test_found_in_a_parent_folder_or_under_src(tmp_path):
    lay_out(tmp_path / "src", "from .utils import is_mlu_available\n")
    (tmp_path / "tools").mkdir()
    assert lacks([tmp_path / "tools", tmp_path])


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on sys.path standing for site-packages, the finder's memo cleared."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    _forget()
    yield folder
    _forget()


def _forget() -> None:
    """Clear what the library checks remember of installed packages."""
    library_checks._installed.cache_clear()
    library_checks.installed_exports.cache_clear()


def test_a_library_in_neither_the_tree_nor_the_environment_counts_as_lacking_it(tmp_path, site, monkeypatch):
    """accelerate's launch.py handed over alone, accelerate not installed: which release it
    belongs to is unknown, so its check is not imported."""
    table = {"mmengine.device": "is_npu_available", "no_such_lib_xyz.utils": "is_npu_available"}
    monkeypatch.setattr(library_checks, "npu_checks", lambda: table)
    (tmp_path / "train.py").write_text("import torch\n")
    lay_out(site, CHECK)  # mmengine installed, with the check
    assert absent_checks([tmp_path]) == {"no_such_lib_xyz.utils"}


def test_a_library_not_in_the_tree_is_judged_by_its_installed_copy(tmp_path, site):
    """mmengine/dist/utils.py ported alone beside an mmengine older than #572: the port
    must not import `is_npu_available` from mmengine.device (ImportError)."""
    (tmp_path / "proj").mkdir()
    lay_out(site, "from .utils import is_mlu_available\n")
    assert lacks([tmp_path / "proj"])
    assert "mmengine" not in sys.modules  # found on the path, never imported
    _forget()
    lay_out(site, CHECK)
    assert not lacks([tmp_path / "proj"])


def test_the_trees_copy_is_judged_before_the_installed_one(tmp_path, site):
    lay_out(site, "from .utils import is_mlu_available\n")
    lay_out(tmp_path / "tree", CHECK)
    assert not lacks([tmp_path / "tree"])
