"""A package whose modules import a library's NPU check at top level (trl's modules: ``from
transformers import is_torch_npu_available``) has its other files ported with that check,
imported the same way, instead of a ``<pkg>/_device.py`` the port adds (trl #4056's
activation_offloading.py, as its engineers ported it). The library's own package, imports
in a function or a ``try:``, and a copy of the library lacking the check give none."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from trees import write
from typer.testing import CliRunner

from migrate.cli import app
from migrate.core.findings import splice
from migrate.core.import_placement import import_edits
from migrate.scan.project import _facts_from_data, discover
from migrate.scan.project.facts import _facts_data

MODELING = """\
    from transformers import PreTrainedModel, is_torch_npu_available


    def on_npu(model: PreTrainedModel):
        return is_torch_npu_available()
    """

TRAINER = """\
    from transformers import (
        Trainer,
        is_torch_npu_available,
    )


    def empty_cache(trainer: Trainer):
        return is_torch_npu_available()
    """

# trl/models/activation_offloading.py before #4056, reduced
OFFLOADING = """\
    import torch
    from accelerate import logging
    from torch import nn
    from torch.autograd.graph import saved_tensors_hooks


    logger = logging.get_logger(__name__)


    class OffloadActivations(saved_tensors_hooks):
        def __init__(self):
            self.s0 = torch.cuda.default_stream()
            self.s1 = torch.cuda.Stream()

        def pack(self, activation):
            with torch.cuda.stream(self.s1):
                return activation.to("cuda", non_blocking=True)
    """

PORTED = """\
    import torch
    from accelerate import logging
    from torch import nn
    from torch.autograd.graph import saved_tensors_hooks
    from transformers import is_torch_npu_available


    logger = logging.get_logger(__name__)


    class OffloadActivations(saved_tensors_hooks):
        def __init__(self):
            torch_device = torch.npu if is_torch_npu_available() else torch.cuda
            self.s0 = torch_device.default_stream()
            self.s1 = torch_device.Stream()

        def pack(self, activation):
            torch_device = torch.npu if is_torch_npu_available() else torch.cuda
            with torch_device.stream(self.s1):
                device_type = "npu" if is_torch_npu_available() else "cuda"
                return activation.to(device_type, non_blocking=True)
    """


def apply(path: Path) -> None:
    result = CliRunner().invoke(app, ["apply", str(path), "--no-cache", "--no-progress"])
    assert result.exit_code in (0, 1), result.output


def tree(root: Path, more: dict[str, str] | None = None) -> Path:
    files = {
        "pkg/__init__.py": "",
        "pkg/modeling.py": MODELING,
        "pkg/trainer.py": TRAINER,
        "pkg/offloading.py": OFFLOADING,
    }
    write(root, {**files, **(more or {})})
    return root / "pkg"


def test_a_file_is_ported_with_the_check_its_package_imports_and_no_helper_module(tmp_path):
    pkg = tree(tmp_path)
    apply(pkg)
    assert (pkg / "offloading.py").read_text() == textwrap.dedent(PORTED)
    assert not (pkg / "_device.py").exists()
    before = {p: p.read_text() for p in pkg.rglob("*.py")}
    apply(pkg)  # a second port changes nothing
    assert {p: p.read_text() for p in pkg.rglob("*.py")} == before
    ast.parse(before[pkg / "offloading.py"])


def fd_of(root: Path, rel: str = "pkg/offloading.py"):
    return discover([(root / rel, rel)], root).for_file(rel)


def test_the_most_imported_check_is_chosen_and_a_tie_by_module_name(tmp_path):
    utils = "from transformers.utils import is_torch_npu_available\n"
    tree(tmp_path, {"pkg/a.py": utils, "pkg/b.py": utils, "pkg/c.py": utils})  # 3 against 2
    assert fd_of(tmp_path).library_checks == (
        ("transformers.utils", "is_torch_npu_available"),
        ("transformers", "is_torch_npu_available"),
    )
    apply(tmp_path / "pkg")
    assert (
        "\nfrom transformers.utils import is_torch_npu_available\n"
        in (tmp_path / "pkg" / "offloading.py").read_text()
    )
    (tmp_path / "pkg" / "c.py").unlink()  # 2 against 2: by module name
    (tmp_path / "pkg" / "offloading.py").write_text(textwrap.dedent(OFFLOADING))
    assert fd_of(tmp_path).library_checks[0] == ("transformers", "is_torch_npu_available")


def test_imports_in_a_function_or_a_guard_are_not_the_packages(tmp_path):
    guarded = """\
        try:
            from transformers import is_torch_npu_available
        except ImportError:
            is_torch_npu_available = None


        def f():
            from transformers import is_torch_npu_available

            return is_torch_npu_available
        """
    write(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": guarded, "pkg/offloading.py": OFFLOADING})
    assert fd_of(tmp_path).library_checks == ()
    apply(tmp_path / "pkg")
    assert (tmp_path / "pkg" / "_device.py").exists()
    assert "transformers" not in (tmp_path / "pkg" / "offloading.py").read_text()


def test_the_librarys_own_package_does_not_import_its_check_from_itself(tmp_path):
    """transformers' own modules importing `from transformers import ...`: the import of
    the package by one of its modules may be circular; its relative ones are not counted."""
    write(
        tmp_path,
        {
            "transformers/__init__.py": "def is_torch_npu_available():\n    return False\n",
            "transformers/a.py": "from transformers import is_torch_npu_available\n",
            "transformers/b.py": "from transformers import is_torch_npu_available\n",
            "transformers/offloading.py": OFFLOADING,
        },
    )
    assert fd_of(tmp_path, "transformers/offloading.py").library_checks == ()


def test_a_copy_of_the_library_without_the_check_gives_none(tmp_path):
    """The library's source beside the package lacks the check (an older release): the
    port does not import it (library_checks.py absent_checks), it adds its own module."""
    pkg = tree(tmp_path, {"transformers/__init__.py": "def other():\n    return 1\n"})
    apply(pkg)
    assert (pkg / "_device.py").exists()
    assert "import is_torch_npu_available" not in (pkg / "offloading.py").read_text()


def test_the_checks_round_trip_through_the_facts_cache():
    good = {"helpers": [], "npu_arms": [], "uses": [], "relative_imports": False, "run_by_path": []}
    data = {**good, "family": None, "checks": [["transformers", "is_torch_npu_available", 2]]}
    facts = _facts_from_data(data)
    assert facts is not None and facts[6] == (("transformers", "is_torch_npu_available", 2),)
    assert _facts_data(facts) == data
    for bad in ([["a b", "n", 1]], [["m", "n()", 1]], [["m", "n", 0]], [["m", "n"]], "m"):
        assert _facts_from_data({**good, "checks": bad}) is None


def test_a_library_import_goes_among_the_third_party_ones_in_isort_order():
    text = "import os\n\nimport torch\nfrom accelerate import x\nfrom yaml import y\n\nfrom . import z\n"
    stmt = "from transformers import is_torch_npu_available"
    edits = import_edits(text, ast.parse(text), [stmt], libraries=frozenset({"transformers"}))
    assert splice(text, edits) == text.replace("from yaml", stmt + "\nfrom yaml")
    edits = import_edits(text, ast.parse(text), [stmt])  # not known as a library: a section of its own
    assert splice(text, edits) == text.replace("from . import", stmt + "\n\nfrom . import")


def test_the_scan_report_names_the_check_the_package_is_ported_with(tmp_path):
    tree(tmp_path)
    described = dict(discover([(tmp_path / "pkg/offloading.py", "pkg/offloading.py")], tmp_path).describe())
    assert described["pkg"] == "transformers.is_torch_npu_available(), as its modules import it"
