"""Trees shaped like the projects whose device-check families MIG208 extends (mmengine
before #572, diffusers before #7144, reduced), and the CLI port the family tests run."""

from __future__ import annotations

from pathlib import Path

from running import python_in
from typer.testing import CliRunner

from migrate.cli import app

# mmengine before #572, reduced: yapf-wrapped imports, single quotes, `__all__`
MMENGINE = {
    "mmengine/__init__.py": "",
    "mmengine/device/__init__.py": """\
        from .utils import (get_device, get_max_cuda_memory, is_cuda_available,
                            is_mlu_available, is_mps_available)

        __all__ = [
            'get_max_cuda_memory', 'get_device', 'is_cuda_available',
            'is_mlu_available', 'is_mps_available'
        ]
        """,
    "mmengine/device/utils.py": """\
        import torch


        def get_max_cuda_memory(device=None) -> int:
            mem = torch.cuda.max_memory_allocated(device=device)
            torch.cuda.reset_peak_memory_stats()
            return int(mem)


        def is_cuda_available() -> bool:
            return torch.cuda.is_available()


        def is_mlu_available() -> bool:
            return hasattr(torch, 'is_mlu_available') and torch.is_mlu_available()


        def is_mps_available() -> bool:
            return False


        def get_device() -> str:
            if is_cuda_available():
                return 'cuda'
            elif is_mlu_available():
                return 'mlu'
            return 'cpu'
        """,
    "mmengine/dist/__init__.py": "",
    "mmengine/dist/utils.py": """\
        import torch
        from mmengine.device import is_mlu_available


        def init(rank):
            if is_mlu_available():
                torch.mlu.set_device(rank)
            else:
                num_gpus = torch.cuda.device_count()
                torch.cuda.set_device(rank % num_gpus)


        def sync():
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        """,
}

# diffusers before #7144, reduced: import_utils does not import torch; relative imports in
# parentheses, a name a line
DIFFUSERS = {
    "src/diffusers/__init__.py": "",
    "src/diffusers/utils/__init__.py": """\
        from .import_utils import (
            is_torch_available,
            is_torch_xla_available,
        )
        """,
    "src/diffusers/utils/import_utils.py": """\
        import importlib.util

        _torch_xla_available = importlib.util.find_spec("torch_xla") is not None


        def is_torch_available():
            return importlib.util.find_spec("torch") is not None


        def is_torch_xla_available():
            return _torch_xla_available


        def is_flax_available():
            return False
        """,
    "src/diffusers/training_utils.py": """\
        import random

        import torch

        from .utils import (
            is_torch_available,
        )


        def set_seed(seed: int):
            random.seed(seed)
            torch.manual_seed(seed)
            torch.cuda.manual_seed_all(seed)
        """,
}


def apply(*paths: Path) -> str:
    result = CliRunner().invoke(app, ["apply", *map(str, paths), "--no-cache", "--no-progress"])
    assert result.exit_code in (0, 1), result.output
    return result.output


FAMILY = (
    "import torch\n\n\ndef is_cuda_available():\n    return torch.cuda.is_available()\n\n\n"
    "def is_mlu_available():\n    return False\n"
)


def run_in(tmp_path: Path, code: str) -> str:
    """What ``code`` prints, run in ``tmp_path`` (it must exit 0)."""
    done = python_in(tmp_path, code)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
