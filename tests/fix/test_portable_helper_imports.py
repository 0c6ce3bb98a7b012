"""Where the helper a portable port adds is imported from, and how each file spells that
import: as the file imports its own package, absolutely from a script run by path."""

from __future__ import annotations

import subprocess
import sys

from trees import write

from .goldens import migrate_cli


def test_a_file_that_imports_none_of_its_package_follows_the_package(tmp_path):
    """timm: most files import their package relatively; random_erasing.py imports only
    torch, and still gets `from .._device import` like the rest; utils/cuda.py imports
    the package absolutely and keeps doing so."""
    write(
        tmp_path,
        {
            "timm/__init__.py": "from .models import create_model\n",
            "timm/models/__init__.py": "from ._factory import create_model\n",
            "timm/models/_factory.py": "def create_model(name):\n    return name\n",
            "timm/data/__init__.py": "from .random_erasing import RandomErasing\n",
            "timm/data/random_erasing.py": """\
                import torch


                def _get_pixels(patch_size, dtype=torch.float32):
                    return torch.empty(patch_size, dtype=dtype, device='cuda').normal_()
                """,
            "timm/utils/__init__.py": "",
            "timm/utils/cuda.py": """\
                import torch

                from timm.models import create_model


                def scaler():
                    return torch.cuda.amp.GradScaler(), create_model
                """,
        },
    )
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    erasing = (tmp_path / "timm" / "data" / "random_erasing.py").read_text()
    cuda = (tmp_path / "timm" / "utils" / "cuda.py").read_text()
    assert "from .._device import get_device_type\n" in erasing
    # no minimum torch declared, none shown by the code: the GradScaler every torch has
    assert "from timm._device import get_device_module\n" in cuda
    assert "get_device_module().amp.GradScaler()" in cuda


def test_a_file_that_imports_its_package_both_ways_imports_the_helper_as_it_does(tmp_path):
    """ms-swift: `from swift.utils import ...` beside `from .arguments import ...`: the
    helper comes relatively from within the file's own folder, absolutely from beyond."""
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/util.py": "def f():\n    return 1\n",
            "pkg/near.py": """\
                import torch

                from pkg.util import f
                from .util import f as g


                def run(x):
                    return x.cuda(), f, g
                """,
            "pkg/sub/__init__.py": "",
            "pkg/sub/args.py": "A = 1\n",
            "pkg/sub/far.py": """\
                import torch

                from pkg.util import f
                from .args import A


                def run(x):
                    return x.cuda(), f, A
                """,
        },
    )
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    assert "from ._device import get_device_type\n" in (tmp_path / "pkg" / "near.py").read_text()
    far = (tmp_path / "pkg" / "sub" / "far.py").read_text()
    assert "from pkg._device import get_device_type\n" in far and ".._device" not in far


def test_a_script_inside_a_relative_package_imports_the_helper_absolutely(tmp_path):
    """accelerate 1.6: the package imports itself relatively, but test_utils/scripts/*.py are
    run by path (`accelerate test` launches test_script.py), where a relative import fails
    (ImportError: no known parent package). A file with a `__main__` block and no relative
    import of its own gets `from accelerate._device import ...`."""
    write(
        tmp_path,
        {
            "acc/__init__.py": "from .state import PartialState\n",
            "acc/state.py": "from .utils import flag\n\n\nclass PartialState:\n    pass\n",
            "acc/utils.py": "flag = 1\n",
            "acc/scripts/__init__.py": "",
            "acc/scripts/test_cli.py": """\
                import torch


                def main():
                    if torch.cuda.is_available():
                        num_gpus = torch.cuda.device_count()
                    else:
                        num_gpus = 0
                    print(f"Successfully ran on {num_gpus} GPUs")


                if __name__ == "__main__":
                    main()
                """,
            "acc/scripts/helper.py": """\
                import torch


                def count():
                    return torch.cuda.device_count()
                """,
        },
    )
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    script = tmp_path / "acc" / "scripts" / "test_cli.py"
    # the NPU twin of its CUDA arm asks the helper, imported absolutely
    assert "from acc._device import get_device_type\n" in script.read_text()
    assert (
        '    elif get_device_type() == "npu":\n        num_gpus = torch.npu.device_count()\n'
        in script.read_text()
    )
    helper = (tmp_path / "acc" / "scripts" / "helper.py").read_text()
    assert "from .._device import get_device_module\n" in helper  # the package's own way elsewhere
    run = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        timeout=900,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == "Successfully ran on 0 GPUs\n"


def test_a_project_helper_the_file_imports_relatively_is_called_as_imported(tmp_path):
    """`from .util import get_dev as gd` already binds the helper: no second import."""
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/util.py": """\
                import torch


                def get_dev():
                    if hasattr(torch, "npu") and torch.npu.is_available():
                        return "npu"
                    return "cuda"
                """,
            "pkg/train.py": """\
                from .util import get_dev as gd


                def step(x):
                    return x.to("cuda"), gd
                """,
        },
    )
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    train = (tmp_path / "pkg" / "train.py").read_text()
    assert train.startswith("from .util import get_dev as gd\n\n\ndef step(x):\n    return x.to(gd()), gd\n")


def test_a_helper_import_wrapped_in_parentheses_still_gets_its_helpers_made(tmp_path):
    """mmengine/dist/utils.py: the absolute import of three helpers wraps at the project's
    line length, and the module made must still hold all three."""
    write(
        tmp_path,
        {
            "pyproject.toml": "[tool.ruff]\nline-length = 60\n",
            "pkg/__init__.py": "",
            "pkg/util.py": "A = 1\n",
            "pkg/dist/__init__.py": "",
            "pkg/dist/utils.py": """\
                import torch
                import torch.distributed as dist

                from pkg.util import A


                def setup(x):
                    dist.init_process_group("nccl")
                    torch.cuda.empty_cache()
                    return x.to("cuda"), A
                """,
        },
    )
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    utils = (tmp_path / "pkg" / "dist" / "utils.py").read_text()
    assert "from pkg._device import (\n" in utils
    names = ("get_device_module", "get_device_type", "get_dist_backend")
    assert all(f"    {n},\n" in utils for n in names), utils
    helper = (tmp_path / "pkg" / "_device.py").read_text()
    assert all(f"\ndef {n}(" in helper for n in names), helper
