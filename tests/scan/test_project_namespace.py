"""A folder without __init__.py inside a package is part of it where its code says so
(migrate/scan/project/namespace.py): its files import the package's helper the way they
import the package, no helper block pasted."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from fix.goldens import migrate_cli
from running import python_in
from trees import write

MODEL = """\
    import torch


    def f(x):
        torch.cuda.synchronize()
        return x.to("cuda")
    """
RUN = """\
    import torch


    def run(x):
        torch.cuda.empty_cache()
        return x.to("cuda" if torch.cuda.is_available() else "cpu") * 2
    """


def apply(root: Path) -> None:
    r = migrate_cli(["apply", str(root), "--no-cache", "--no-progress"])
    assert r.exit_code == 0, r.output


def test_a_namespace_folder_imports_the_packages_helper_relatively_as_its_siblings_do(tmp_path):
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/model.py": MODEL,
            "pkg/sub/run.py": RUN,
            "pkg/sub/glue.py": "from ..model import f\n",
        },
    )
    apply(tmp_path)
    run = (tmp_path / "pkg/sub/run.py").read_text()
    assert "from .._device import get_device_module, get_device_type\n" in run
    assert "def is_npu_available" not in run and "getattr(torch" not in run
    assert (tmp_path / "pkg/_device.py").exists()
    proc = subprocess.run(
        [sys.executable, "-c", "import torch, pkg.sub.run as r; print(r.run(torch.ones(1)))"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "tensor([2.])" in proc.stdout
    before = run
    apply(tmp_path)
    assert (tmp_path / "pkg/sub/run.py").read_text() == before


def test_absolutely_where_the_folder_imports_the_package_by_name(tmp_path):
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/model.py": MODEL,
            "pkg/tools/deep/run.py": textwrap.dedent(RUN).replace(
                "import torch\n", "import torch\n\nfrom pkg.model import f\n"
            ),
        },
    )
    apply(tmp_path)
    run = (tmp_path / "pkg/tools/deep/run.py").read_text()
    assert "from pkg._device import get_device_module, get_device_type\n" in run
    assert "def is_npu_available" not in run


def test_a_folder_that_never_imports_the_package_or_is_run_by_path_stays_scripts(tmp_path):
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/model.py": MODEL,
            "pkg/scripts/lone.py": RUN,
            "pkg/alone/main.py": textwrap.dedent(RUN) + '\n\nif __name__ == "__main__":\n    import helper\n',
            "pkg/alone/helper.py": "from ..model import f\n",
        },
    )
    apply(tmp_path)
    for rel in ("pkg/scripts/lone.py", "pkg/alone/main.py"):
        text = (tmp_path / rel).read_text()
        assert "_device import" not in text and "def is_npu_available() -> bool:" in text, rel


def test_a_package_below_a_namespace_folder_is_a_subpackage_of_the_package_above(tmp_path):
    """captum/testing/ has no __init__.py, captum/testing/helpers/ has one: its files are
    captum.testing.helpers.*, and the helper import must resolve from there (it was
    `from helpers._device import ...`: ModuleNotFoundError in every captum test)."""
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/helpers/__init__.py": "",
            "pkg/sub/helpers/basic.py": "import torch\n\n\ndef seed(s):\n    torch.cuda.manual_seed_all(s)\n",
        },
    )
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    basic = (tmp_path / "pkg/sub/helpers/basic.py").read_text()
    assert "from pkg._device import get_device_module\n" in basic
    run = python_in(tmp_path, "import pkg.sub.helpers.basic as b; b.seed(0)")
    assert run.returncode == 0, run.stderr
