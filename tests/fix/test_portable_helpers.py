"""Portable ports route every device decision through one named helper: a `device` in scope,
the project's helper, or the one the port adds once (a package module, or definitions at the
top of a script) — never an inline multi-call expression, never `hasattr(torch, "npu")`."""

from __future__ import annotations

import subprocess
import sys

import pytest
from porting import port
from running import python_in
from trees import write

from .goldens import migrate_cli

# a script's device type, spelled around its NPU check, in the file's quotes
TYPE1 = "'npu' if is_npu_available() else 'cuda'"
TYPE2 = '"npu" if is_npu_available() else "cuda"'


LIB = {
    "pkg/__init__.py": "",
    "pkg/ops.py": """\
        import torch

        from pkg import __name__ as package


        def run(x):
            torch.cuda.manual_seed_all(0)
            y = x.cuda()
            torch.cuda.empty_cache()
            return y.sum().item(), torch.cuda.max_memory_allocated()
        """,
    "pkg/util.py": """\
        from .ops import run

        DEFAULT_DEVICE = "cuda"
        """,
}


def test_a_package_gets_one_helper_module_that_every_file_imports(tmp_path):
    write(tmp_path, LIB)
    diff = migrate_cli(["apply", str(tmp_path), "--diff", "--no-cache"])
    assert "--- /dev/null\n+++ b/pkg/_device.py\n" in diff.stdout  # `git apply` creates it
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    ops = (tmp_path / "pkg" / "ops.py").read_text()
    assert "from pkg._device import get_device_module, get_device_type\n" in ops
    assert "y = x.to(get_device_type())" in ops and "get_device_module().empty_cache()" in ops
    util = (tmp_path / "pkg" / "util.py").read_text()
    # each file imports the helper as it imports its own package: ops.py imports none of
    # it and follows the package (a tie: absolute); util.py imports it relatively
    assert util.startswith("from ._device import get_device_type\nfrom .ops import run\n")
    assert "DEFAULT_DEVICE = get_device_type()" in util
    assert sorted(p.name for p in (tmp_path / "pkg").glob("*.py")) == [
        "__init__.py",
        "_device.py",
        "ops.py",
        "util.py",
    ]
    again = migrate_cli(["apply", str(tmp_path), "--check", "--no-cache"])
    assert again.exit_code == 0 and "0 files would change" in again.output
    # imports and runs on this CPU host without torch_npu, as the original would have
    pytest.importorskip("torch")
    probe = (
        "import sys; sys.modules['torch_npu'] = None; sys.path.insert(0, sys.argv[1]); "
        "import torch, pkg.ops; print(pkg.ops.run(torch.ones(3)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert out.stdout.strip() == "(3.0, 0)", out.stderr[-2000:]


def test_the_helper_module_is_never_written_through_a_link(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/m.py": "import torch\ntorch.cuda.synchronize()\n"})
    outside = tmp_path / "outside.py"
    outside.write_text("KEEP = 1\n")
    (tmp_path / "pkg" / "_device.py").symlink_to(outside)
    r = migrate_cli(["apply", str(tmp_path / "pkg"), "--no-cache"])
    assert r.exit_code == 0, r.output
    assert outside.read_text() == "KEEP = 1\n"
    assert "from pkg._device_helpers import" in (tmp_path / "pkg" / "m.py").read_text()
    assert (tmp_path / "pkg" / "_device_helpers.py").is_file()


def test_a_script_defines_one_short_check_once_after_its_imports():
    """No pasted helper block: a script gets the one function a device decision needs, and
    every decision is spelled around it, CUDA's side as the code wrote it."""
    out = port("""\
        import torch as th
        import os

        th.cuda.synchronize()
        x = th.ones(1).cuda()
        """)
    head = out.split("\n\n\n")
    assert head[0] == "import torch as th\nimport os"
    assert "def is_npu_available() -> bool:" in out and "th.accelerator" not in out
    assert 'getattr(th, "npu", None)' in out  # torch < 2.6 has no th.accelerator
    assert "def get_device" not in out and out.count("\ndef ") == 1
    assert len(head[1].splitlines()) <= 6  # one short function
    assert out.endswith(
        "\n\n\n(th.npu if is_npu_available() else th.cuda).synchronize()\n"
        'x = th.ones(1).to("npu" if is_npu_available() else "cuda")\n'
    )
    assert port(out) == out


@pytest.mark.parametrize(
    "code,expected",
    [
        # a device variable in scope: the port uses it
        ("def f(x, device):\n    return x.cuda()\n", "return x.to(device)"),
        ("def f(x):\n    device = torch.device('cuda')\n    return x.cuda()\n", "return x.to(device)"),
        (
            "class M:\n    def __init__(self):\n        self.device = torch.device('cuda')\n"
            "    def f(self, x):\n        return x.cuda()\n",
            "return x.to(self.device)",
        ),
        # ... not where it may be None or the CPU on purpose
        ("def f(x, device=None):\n    return x.cuda()\n", f"return x.to({TYPE2})"),
        ("def f(x):\n    device = 'cpu'\n    return x.cuda()\n", f"return x.to({TYPE1})"),
        # ... nor inside its own definition, nor before it
        (
            "def f(x):\n    y = x.cuda()\n    device = torch.device('cuda')\n    return y\n",
            f"y = x.to({TYPE1})",
        ),
    ],
)
def test_a_device_in_scope(code, expected):
    assert expected in port("import torch\n" + code)


def test_module_level_code_before_the_functions_can_use_the_helper():
    out = port("""\
        import torch
        DEVICE = torch.device("cuda")
        import numpy as np

        def f():
            return np.zeros(1)
        """)
    defs = out.index("def is_npu_available")
    assert defs < out.index('DEVICE = torch.device("npu" if is_npu_available() else "cuda")')
    compile(out, "t.py", "exec")


def test_one_helper_family_per_project(tmp_path, monkeypatch):
    """A project that names its device type itself gets only what it lacks, built on its own
    helper: the added module imports the project's type helper instead of defining another.
    A file given on its own (from the project's folder) gets the package's module too."""
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        {
            "kit/__init__.py": "",
            "kit/device/__init__.py": "from kit.device.utils import get_device\n",
            "kit/device/utils.py": """\
            import torch

            DEVICE = "cpu"
            if torch.cuda.is_available():
                DEVICE = "cuda"
            elif is_npu_available():
                DEVICE = "npu"


            def get_device():
                return DEVICE
            """,
            "kit/dist/__init__.py": "",
            "kit/dist/dist.py": """\
            import torch


            def f(x):
                torch.cuda.synchronize()
                return x.to("cuda")
            """,
        },
    )
    assert migrate_cli(["apply", str(tmp_path / "kit" / "dist" / "dist.py"), "--no-cache"]).exit_code == 0
    dist = (tmp_path / "kit" / "dist" / "dist.py").read_text()
    assert "from kit.device import get_device\n" in dist  # the public name, not .utils
    assert "from kit._device import get_device_module\n" in dist
    assert "return x.to(get_device())" in dist and "def get_device_type" not in dist
    helper = (tmp_path / "kit" / "_device.py").read_text()  # made for a single file too
    assert "from kit.device.utils import get_device as get_device_type\n" in helper  # defining module
    assert "def get_device_type" not in helper and "def get_device_module" in helper
    assert (tmp_path / "kit" / "device" / "utils.py").read_text().count("torch.cuda") == 1


def test_the_added_module_imports_the_project_helper_from_where_it_is_defined(tmp_path):
    """peft 0.15.2: infer_device() is defined in peft/utils/other.py and re-exported by
    peft/utils/__init__.py, which imports .integrations first. The port made integrations.py
    import peft._device, and _device.py import `from peft.utils import infer_device`: importing
    peft ran _device.py while peft.utils was half initialised (ImportError: cannot import name
    'infer_device' from partially initialized module). The package must still import."""
    write(
        tmp_path,
        {
            "pft/__init__.py": "from .utils import infer_device, to_device\n",
            "pft/utils/__init__.py": "from .integrations import to_device\nfrom .other import infer_device\n",
            "pft/utils/other.py": """\
                import torch


                def infer_device():
                    if torch.cuda.is_available():
                        return "cuda"
                    elif hasattr(torch, "npu") and torch.npu.is_available():
                        return "npu"
                    return "cpu"
                """,
            "pft/utils/integrations.py": """\
                import torch


                def to_device(weight):
                    if torch.cuda.is_available():
                        torch.cuda.synchronize()
                    return weight


                def sync():
                    torch.cuda.synchronize()
                """,
        },
    )
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    helper = (tmp_path / "pft" / "_device.py").read_text()
    assert "from pft.utils.other import infer_device as get_device_type\n" in helper
    integrations = (tmp_path / "pft" / "utils" / "integrations.py").read_text()
    assert "get_device_module().synchronize()" in integrations  # sync()
    # to_device's CUDA arm gains its NPU twin, asking the project's helper where it is defined
    assert "from .other import infer_device\n" in integrations
    assert '    elif infer_device() == "npu":\n        torch.npu.synchronize()\n' in integrations
    run = python_in(tmp_path, "import pft; print(pft.to_device(1), pft.infer_device())")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "1 cpu\n"


MMENGINE_LIKE = {
    "mm/__init__.py": "",
    "mm/device/__init__.py": "from .utils import get_device, get_max_cuda_memory\n",
    "mm/device/utils.py": """\
        import torch

        try:
            import torch_npu  # noqa: F401

            IS_NPU_AVAILABLE = hasattr(torch, "npu") and torch.npu.is_available()
        except Exception:
            IS_NPU_AVAILABLE = False


        def get_max_cuda_memory(device=None):
            mem = torch.cuda.max_memory_allocated(device=device)
            torch.cuda.reset_peak_memory_stats()
            return mem


        def get_device() -> str:
            if IS_NPU_AVAILABLE:
                return "npu"
            return "cuda" if torch.cuda.is_available() else "cpu"
        """,
    "mm/dist.py": """\
        import torch

        from mm.device import get_device


        def current():
            return torch.device(get_device(), torch.cuda.current_device()), torch.cuda.device_count()
        """,
}


def test_the_module_the_added_helper_builds_on_does_not_import_it(tmp_path):
    """mmengine: mm/_device.py imports get_device from mm.device; mm/device/utils.py (which
    defines it) importing mm._device back made `import mm.device` fail (circular import)."""
    import subprocess
    import sys

    write(tmp_path, MMENGINE_LIKE)
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    helper = (tmp_path / "mm" / "_device.py").read_text()
    assert "from mm.device.utils import get_device" in helper
    assert "mm._device" not in (tmp_path / "mm" / "device" / "utils.py").read_text()
    assert "from mm._device import get_device_module" in (tmp_path / "mm" / "dist.py").read_text()
    check = "import mm.device, mm.dist, mm._device; print(mm.dist.get_device_module().__name__)"
    out = subprocess.run(
        [sys.executable, "-c", check], cwd=tmp_path, capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "torch.cuda"


def test_npu_joins_a_device_collection_as_a_formatter_keeps_it():
    # repro (timm train.py): `device.type in ('cuda',)` became `('cuda', 'npu',)`, whose
    # magic trailing comma makes ruff format explode the tuple onto three lines
    code = """\
        def f(device):
            a = device.type in ('cuda',)
            b = device.type in ["cuda"]
            c = device.type in (
                "cuda",
                "xpu",
            )
            d = device.type in ("cuda",  # gpu
            )
            return a, b, c, d
        """
    got = port(code)
    assert "a = device.type in ('cuda', 'npu')\n" in got
    assert 'b = device.type in ["cuda", "npu"]\n' in got
    assert '        "xpu",\n        "npu",\n    )' in got
    assert 'd = device.type in ("cuda", "npu"  # gpu\n' in got
    compile(got, "t.py", "exec")
    # what ruff format makes of the ported lines: the one-liners stay one line each
    lines = [line.strip() for line in got.splitlines() if line.strip().startswith(("a =", "b ="))]
    ruff = [sys.executable, "-m", "ruff", "format", "-"]
    out = subprocess.run(ruff, input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    assert out.stdout.count("\n") == 2, out.stdout


def test_the_helper_module_holds_the_helpers_the_port_uses_and_grows_with_it(tmp_path):
    """Where the port needs the device type only, the module it adds holds that one function
    (an engineer adds what the port needs, not a kit); a later port needing another helper
    adds it to the end of the port's module."""
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/utils.py": """\
                import torch


                def infer_device(x):
                    return x.to("cuda").device
                """,
        },
    )
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    module = (tmp_path / "pkg" / "_device.py").read_text()
    assert "def get_device_type()" in module
    assert "get_device_module" not in module and "get_dist_backend" not in module
    assert module.count('"""Device helpers') == 1 and module.startswith('"""')
    (tmp_path / "pkg" / "dist.py").write_text(
        "import torch.distributed as dist\n\n\ndef init():\n    dist.init_process_group(backend='nccl')\n"
    )
    (tmp_path / "pkg" / "_device.py").chmod(0o640)
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "pkg" / "_device.py").stat().st_mode & 0o7777 == 0o640  # its mode is kept
    grown = (tmp_path / "pkg" / "_device.py").read_text()
    assert grown.startswith(module.rstrip("\n") + "\n\n\ndef get_dist_backend() -> str:")
    assert grown.count("def get_device_type()") == 1
    assert "from pkg._device import get_dist_backend" in (tmp_path / "pkg" / "dist.py").read_text()
    again = migrate_cli(["apply", str(tmp_path), "--check", "--no-cache"])
    assert again.exit_code == 0 and "0 files would change" in again.output
    pytest.importorskip("torch")
    probe = (
        "import sys; sys.modules['torch_npu'] = None; sys.path.insert(0, sys.argv[1]); "
        "import torch, pkg._device as d, pkg.utils as u; "
        "print(d.get_dist_backend(), u.infer_device(torch.ones(1)).type)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert out.stdout.strip() == "nccl cpu", out.stderr[-2000:]


def test_a_persons_device_module_is_never_extended(tmp_path):
    """The module at the helper's path that a person wrote (or edited beyond the port's
    helpers) is not the port's to grow: the port picks another free name."""
    person = '"""Ours."""\n\n\ndef get_device_type():\n    return "cuda"\n\n\ndef helper():\n    return 1\n'
    write(tmp_path, {"pkg/__init__.py": "", "pkg/m.py": "import torch\ntorch.cuda.synchronize()\n"})
    (tmp_path / "pkg" / "_device.py").write_text(person)
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "pkg" / "_device.py").read_text() == person
