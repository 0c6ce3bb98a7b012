"""Imports a port adds keep the file's import order where it is sorted, as isort / ruff's
I001 keeps it (migrate/core/import_placement.py)."""

from __future__ import annotations

import ast

from migrate.core.findings import splice
from migrate.core.import_placement import import_edits, isort_key


def add(text: str, *statements: str) -> str:
    return splice(text, import_edits(text, ast.parse(text), list(statements), "x"))


def test_a_name_joins_a_sorted_from_import_in_its_place():
    text = "import torch\nfrom mmengine.device import is_cuda_available, is_npu_available\n"
    assert add(text, "from mmengine.device import get_device") == (
        "import torch\nfrom mmengine.device import get_device, is_cuda_available, is_npu_available\n"
    )


def test_an_unsorted_or_aliased_list_gets_the_name_appended():
    text = "from kit.device import b, a\nfrom kit.util import f as g\n"
    out = add(text, "from kit.device import c", "from kit.util import h")
    assert "from kit.device import b, a, c\n" in out and "from kit.util import f as g, h\n" in out


def test_a_module_import_goes_where_it_sorts_among_sorted_project_imports():
    text = "import torch\n\nfrom verl.trainer import ppo\nfrom verl.workers import actor\n\nx = 1\n"
    assert add(text, "from verl.utils.device import get_torch_device") == (
        "import torch\n\nfrom verl.trainer import ppo\n"
        "from verl.utils.device import get_torch_device\nfrom verl.workers import actor\n\n"
        "x = 1\n"
    )
    unsorted = "from verl.workers import actor\nfrom verl.trainer import ppo\n\nx = 1\n"
    assert add(unsorted, "from verl.utils.device import get_torch_device") == (
        "from verl.workers import actor\nfrom verl.trainer import ppo\n"
        "from verl.utils.device import get_torch_device\n\nx = 1\n"
    )


def test_isort_order_puts_constants_then_classes_then_functions():
    names = ["get_device", "DeviceSupport", "MAX", "batch_to_device", "Get"]
    assert sorted(names, key=isort_key) == ["MAX", "DeviceSupport", "Get", "batch_to_device", "get_device"]


def test_a_relative_import_goes_where_it_sorts_among_the_relative_ones():
    """accelerate/checkpointing.py: `from ._device import ...` went after `from .state`
    (I001); the relative block after the `if` sorts on its own, `._device` first."""
    text = (
        "import torch\n\nfrom .utils import (\n    a,\n    b,\n)\n\n\n"
        "if is_torch_xla_available():\n    import torch_xla.core.xla_model as xm\n\n"
        "from .logging import get_logger\nfrom .state import PartialState\n\n\nlogger = 1\n"
    )
    out = add(text, "from ._device import get_device_module")
    assert "    import torch_xla.core.xla_model as xm\n\nfrom ._device import get_device_module\n" in out
    assert "from ._device import get_device_module\nfrom .logging import get_logger\n" in out
    # peft/tuners/lora/layer.py: furthest first, as ruff's isort orders relative imports
    layer = "import torch\n\nfrom peft.utils.other import transpose\n\nfrom .config import Config\nx = 1\n"
    assert "from peft.utils.other import transpose\n\nfrom ...utils import infer_device\nfrom .config" in add(
        layer, "from ...utils import infer_device"
    )


def test_the_first_import_of_the_package_opens_its_own_section():
    """kornia/utils/_compat.py imports only torch and third-party modules: the project's
    import goes in a section of its own after them (kornia lints with isort), and before a
    file's relative imports where it has some."""
    text = "import torch\nfrom packaging import version\nfrom torch import Tensor\n\n\ndef f():\n    pass\n"
    assert add(text, "from kornia._device import get_device_module") == (
        "import torch\nfrom packaging import version\nfrom torch import Tensor\n\n"
        "from kornia._device import get_device_module\n\n\ndef f():\n    pass\n"
    )
    rel = "import torch\n\nfrom .ops import run\n\nx = 1\n"
    assert add(rel, "from pkg._device import get_device_type") == (
        "import torch\n\nfrom pkg._device import get_device_type\n\nfrom .ops import run\n\nx = 1\n"
    )


def test_a_package_whose_name_starts_with_torch_is_the_project_not_torch():
    """torchtune's recipes: `from torchtune._device import ...` went right after `import
    torch`, in the third-party block, though the file imports torchtune further down."""
    text = (
        "import torch\nfrom omegaconf import DictConfig\n\nfrom torch import nn\n"
        "from torchtune import config, utils\nfrom torchtune.training import DummyProfiler\n\n"
        "from tqdm import tqdm\n\nx = 1\n"
    )
    out = add(text, "from torchtune._device import get_dist_backend")
    assert out.startswith("import torch\nfrom omegaconf import DictConfig\n\n")
    assert "from torchtune import config, utils\nfrom torchtune._device import get_dist_backend\n" in out
