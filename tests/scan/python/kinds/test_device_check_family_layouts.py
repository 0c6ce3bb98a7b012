"""The NPU member in the family module's own layout (MIG208): its indentation (tabs), the
`__all__` it is listed in (annotated, added to, extended, a tuple), and a family reached
through its module (`import pkg.device.utils as dev`); each tree ported twice and run."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest
from family_trees import FAMILY, MMENGINE, apply
from family_trees import run_in as _imports
from trees import write


def _ported_twice(tmp_path: Path, files: dict[str, str], rel: str) -> str:
    """The text of ``rel`` after porting ``files`` (written as they are: tabs kept), checked
    to be left as it is by a second port."""
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    apply(tmp_path / "pkg")
    before = {p: p.read_text() for p in (tmp_path / "pkg").rglob("*.py")}
    apply(tmp_path / "pkg")
    assert {p: p.read_text() for p in (tmp_path / "pkg").rglob("*.py")} == before
    return before[tmp_path / rel]


def _tabbed(text: str) -> str:
    """``text`` dedented, each level of four spaces a tab."""
    return re.sub(r"(?m)^(?:    )+", lambda m: "\t" * (len(m.group()) // 4), textwrap.dedent(text))


def test_a_tab_indented_family_module_gets_its_member_indented_with_tabs(tmp_path):
    """The member took the template's four spaces in a module indented with tabs (its nested
    `try:` too): it runs, but is not written as the module is."""
    utils = _tabbed("""\
        import importlib.util


        def is_cuda_available():
            return importlib.util.find_spec("torch") is not None


        def is_mlu_available():
            return False


        def get_device():
            if is_cuda_available():
                return "cuda"
            elif is_mlu_available():
                return "mlu"
            return "cpu"
        """)
    files = {"pkg/__init__.py": "from .utils import get_device, is_cuda_available\n", "pkg/utils.py": utils}
    out = _ported_twice(tmp_path, files, "pkg/utils.py")
    member = _tabbed('''\
        def is_npu_available() -> bool:
            """Whether this host has an Ascend NPU."""
            try:
                import torch
            except ImportError:
                return False
            npu = getattr(torch, "npu", None)
            return npu is not None and npu.is_available()


        ''')
    at = utils.index("def is_mlu_available")
    chain = '\telif is_mlu_available():\n\t\treturn "mlu"\n'
    npu_arm = '\telif is_npu_available():\n\t\treturn "npu"\n'
    assert out == (utils[:at] + member + utils[at:]).replace(chain, chain + npu_arm)
    assert _imports(tmp_path, "import pkg; print(pkg.is_npu_available(), pkg.get_device())") == "False cuda"


def _all_ported(tmp_path: Path, where: str, text: str, family: str = FAMILY) -> tuple[str, list[str]]:
    """``text`` (an ``__all__``) at the end of the family module or of the package exporting
    its anchor, ported twice: (its port, the ``__all__`` the package's star import sees)."""
    init, utils = "from .utils import *\n", family + "\n\n" + text
    if where == "__init__":
        init, utils = "from .utils import is_cuda_available\n" + text, family
    out = _ported_twice(tmp_path, {"pkg/__init__.py": init, "pkg/utils.py": utils}, f"pkg/{where}.py")
    module = "pkg" if where == "__init__" else f"pkg.{where}"
    seen = _imports(tmp_path, f"import {module} as m; print(list(m.__all__))")
    return out, ast.literal_eval(seen)


@pytest.mark.parametrize(
    ("where", "before", "after"),
    [
        (
            "utils",
            '__all__: list[str] = ["is_cuda_available"]\n',
            '__all__: list[str] = ["is_cuda_available", "is_npu_available"]\n',
        ),
        (
            "utils",
            '__all__ = ["is_mlu_available"]\n__all__ += ["is_cuda_available"]\n',
            '__all__ = ["is_mlu_available"]\n__all__ += ["is_cuda_available", "is_npu_available"]\n',
        ),
        (
            "utils",
            '__all__ = []\n__all__.extend(["is_cuda_available", "is_mlu_available"])\n',
            '__all__ = []\n__all__.extend(["is_cuda_available", "is_mlu_available", "is_npu_available"])\n',
        ),
        (  # one a line, no trailing comma: none added
            "utils",
            '__all__: list[str] = []\n__all__ += [\n    "is_cuda_available",\n    "is_mlu_available"\n]\n',
            '__all__: list[str] = []\n__all__ += [\n    "is_cuda_available",\n    "is_mlu_available",\n'
            '    "is_npu_available"\n]\n',
        ),
        (
            "__init__",
            '\n__all__: list[str] = [\n    "is_cuda_available",\n    "is_mlu_available",\n]\n',
            '\n__all__: list[str] = [\n    "is_cuda_available",\n    "is_mlu_available",\n'
            '    "is_npu_available",\n]\n',
        ),
        (
            "__init__",
            "\n__all__ = []\n__all__.extend(['is_cuda_available'])\n",
            "\n__all__ = []\n__all__.extend(['is_cuda_available', 'is_npu_available'])\n",
        ),
    ],
    ids=["annotated", "added", "extended", "one-a-line", "package-annotated", "package-extended"],
)
def test_an_annotated_added_or_extended_all_lists_the_member_in_its_layout(tmp_path, where, before, after):
    """`__all__: list[str] = [...]`, `__all__ += [...]` and `__all__.extend([...])` were not
    extended: a star import of the family module did not give the member, and the package
    did not list what it exports."""
    out, seen = _all_ported(tmp_path, where, before)
    if where == "__init__":
        assert out == "from .utils import is_cuda_available, is_npu_available\n" + after
    else:
        assert out.endswith("npu.is_available()\n\n\ndef is_mlu_available():\n    return False\n\n\n" + after)
    scope: dict = {}
    exec(after, scope)  # noqa: S102 - the expected text
    assert seen == list(scope["__all__"]) and "is_npu_available" in seen


XLA_FAMILY = "import torch\n\n\ndef is_xla_available():\n    return False\n"


@pytest.mark.parametrize(
    ("where", "before", "after", "family"),
    [
        (
            "utils",
            '__all__ = ("is_cuda_available",)\n',
            '__all__ = ("is_cuda_available", "is_npu_available")\n',
            FAMILY,
        ),
        (
            "utils",
            '__all__ = "is_cuda_available",\n',
            '__all__ = "is_cuda_available", "is_npu_available"\n',
            FAMILY,
        ),
        (  # sorted: the member goes first, the comma still dropped
            "utils",
            '__all__ = ("is_xla_available",)\n',
            '__all__ = ("is_npu_available", "is_xla_available")\n',
            XLA_FAMILY,
        ),
        (  # a trailing comma the line has is kept
            "utils",
            '__all__ = ("is_cuda_available", "is_mlu_available",)\n',
            '__all__ = ("is_cuda_available", "is_mlu_available", "is_npu_available",)\n',
            FAMILY,
        ),
        (
            "__init__",
            '\n__all__ = (\n    "is_cuda_available",\n)\n',
            '\n__all__ = (\n    "is_cuda_available",\n    "is_npu_available",\n)\n',
            FAMILY,
        ),
        (
            "utils",
            '__all__ = (\n    "is_cuda_available",\n    "is_mlu_available"\n)\n',
            '__all__ = (\n    "is_cuda_available",\n    "is_mlu_available",\n    "is_npu_available"\n)\n',
            FAMILY,
        ),
    ],
    ids=["one", "bare", "sorted", "trailing", "package-a-line", "a-line-no-comma"],
)
def test_a_tuple_all_gains_the_member_without_a_lone_comma_left(tmp_path, where, before, after, family):
    """`("is_cuda_available",)` became `("is_cuda_available", "is_npu_available",)`: the
    comma that made the one-element tuple is not the file's trailing comma."""
    out, seen = _all_ported(tmp_path, where, before, family)
    if where == "__init__":
        assert out == "from .utils import is_cuda_available, is_npu_available\n" + after
    else:
        assert out.endswith("\n\n\n" + after) and "def is_npu_available() -> bool:" in out
    scope: dict = {}
    exec(after, scope)  # noqa: S102 - the expected text
    assert seen == list(scope["__all__"]) and "is_npu_available" in seen


def test_a_file_asking_the_family_through_its_module_gets_the_npu_member_there(tmp_path):
    """`import mmengine.device.utils as dev` then `dev.is_cuda_available()`: the chain had
    no NPU arm (the CUDA arm's "cuda" went through the port's own `_device.py`, and chose
    the CPU on an NPU host); it asks the NPU member through the same module."""
    files = dict(MMENGINE)
    files["mmengine/runner/__init__.py"] = ""
    files["mmengine/runner/pick.py"] = """\
        import mmengine.device.utils as dev


        def pick():
            if dev.is_cuda_available():
                device = 'cuda'
            else:
                device = 'cpu'
            return device
        """
    files["mmengine/runner/chain.py"] = """\
        from mmengine import device


        def pick():
            if device.is_cuda_available():
                return 'cuda'
            elif device.is_mlu_available():
                return 'mlu'
            return 'cpu'
        """
    files["mmengine/runner/dotted.py"] = """\
        import torch

        import mmengine.device


        def sync():
            if mmengine.device.is_cuda_available():
                torch.cuda.synchronize()
        """
    write(tmp_path, files)
    runner = tmp_path / "mmengine" / "runner"
    before = {p.name: p.read_text() for p in runner.glob("*.py")}
    apply(tmp_path / "mmengine")
    after = {p.name: p.read_text() for p in runner.glob("*.py")}
    arm = "    else:\n        device = 'cpu'\n"
    assert after["pick.py"] == before["pick.py"].replace(
        arm, "    elif dev.is_npu_available():\n        device = 'npu'\n" + arm
    )
    last = "        return 'mlu'\n"
    assert after["chain.py"] == before["chain.py"].replace(
        last, last + "    elif device.is_npu_available():\n        return 'npu'\n"
    )
    assert after["dotted.py"] == before["dotted.py"].replace(
        "torch.cuda.synchronize()",
        "(\n            torch.npu if mmengine.device.is_npu_available() else torch.cuda\n"
        "        ).synchronize()",
    )  # wrapped as ruff format wraps it: 88 columns, where the file's lines reach 79
    assert "_device.py" not in {p.name for p in (tmp_path / "mmengine").iterdir()}
    ported = {p: p.read_text() for p in (tmp_path / "mmengine").rglob("*.py")}
    apply(tmp_path / "mmengine")
    assert {p: p.read_text() for p in (tmp_path / "mmengine").rglob("*.py")} == ported
    code = "from mmengine.runner import pick, chain, dotted; dotted.sync()"
    assert _imports(tmp_path, code + "; print(pick.pick(), chain.pick())") == "cpu cpu"
