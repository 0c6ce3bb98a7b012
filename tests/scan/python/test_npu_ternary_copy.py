"""A conditional expression's CUDA arm gains an NPU copy before the fallback and stays as
written (migrate/scan/python/npu_ternary_copy.py)."""

from __future__ import annotations

import pytest
from running import python_in

HELPER = '''\
import torch


def is_npu_available() -> bool:
    """Whether this host has an Ascend NPU."""
    npu = getattr(torch, "npu", None)
    return npu is not None and npu.is_available()
'''

# a model wrapper picking its device in its constructor, as written before an NPU port
CLASS = (
    "import torch\n\n\nclass Runner:\n    def __init__(self):\n        self.device = "
    "torch.device('cuda', torch.cuda.current_device()) if torch.cuda.is_available()"
    " else torch.device('cpu')\n"
)


def test_the_cuda_arm_is_kept_and_its_npu_copy_goes_before_the_fallback(ported):
    """It was ported in place: two hoisted bindings and a widened test, seven lines."""
    out = ported(CLASS)
    cuda = "torch.device('cuda', torch.cuda.current_device()) if torch.cuda.is_available()"
    npu = "torch.device('npu', torch.npu.current_device()) if is_npu_available()"
    assert out == HELPER + (
        "\n\nclass Runner:\n    def __init__(self):\n"
        f"        self.device = {cuda} else {npu} else torch.device('cpu')\n"
    )
    assert ported(out) == out


@pytest.mark.parametrize(
    ("cuda", "npu"),
    [
        ('torch.device("cuda")', 'torch.device("npu")'),
        ('torch.device("cuda", i)', 'torch.device("npu", i)'),
        ('torch.device(f"cuda:{rank}")', 'torch.device(f"npu:{rank}")'),
        (
            'torch.device("cuda", torch.cuda.current_device())',
            'torch.device("npu", torch.npu.current_device())',
        ),
        ('"cuda:0"', '"npu:0"'),
        ('f"cuda:{local_rank}"', 'f"npu:{local_rank}"'),
        (
            'torch.device(f"cuda:{torch.cuda.current_device()}")',
            'torch.device(f"npu:{torch.npu.current_device()}")',
        ),
    ],
)
def test_each_device_spelling_gets_its_npu_copy(ported, cuda, npu):
    head = "def pick(i, rank, local_rank):\n"
    out = ported(f'import torch\n\n\n{head}    return {cuda} if torch.cuda.is_available() else "cpu"\n')
    tail = f'if torch.cuda.is_available() else {npu} if is_npu_available() else "cpu"\n'
    assert out == f"{HELPER}\n\n{head}    return {cuda} {tail}"
    assert ported(out) == out


def test_other_vendors_arms_stay_and_the_npu_copy_takes_the_files_check(ported):
    chain = 'torch.device("cuda") if torch.cuda.is_available() else torch.device("xpu")'
    chain += ' if is_torch_xpu_available() else torch.device("mps") if torch.backends.mps.is_available()'
    head = "import torch\nfrom transformers.utils import is_torch_xpu_available\n\n"
    out = ported(f'{head}DEVICE = {chain} else torch.device("cpu")\n')
    assert out == (
        "import torch\nfrom transformers.utils import is_torch_npu_available, is_torch_xpu_available\n\n"
        f'DEVICE = {chain} else torch.device("npu") if is_torch_npu_available() else torch.device("cpu")\n'
    )
    assert ported(out) == out


IN_PLACE = """\
import os

import torch


def pick():
    return {cuda} if torch.cuda.is_available() else torch.device("cpu")
"""


def test_a_string_about_cuda_in_the_arm_keeps_the_in_place_port(ported):
    """No NPU spelling for "CUDA_DEVICE": the test is widened as before, the arm kept."""
    cuda = 'torch.device(os.environ.get("CUDA_DEVICE", "cuda"))'
    out = ported(IN_PLACE.format(cuda=cuda))
    widened = "(torch.cuda.is_available() or is_npu_available())"
    body = f'    return {cuda} if {widened} else torch.device("cpu")\n'
    assert out == "import os\n\n" + HELPER + "\n\ndef pick():\n" + body
    assert ported(out) == out


def test_an_arm_reading_cudnn_is_left_as_it_is(ported):
    """cuDNN has no NPU counterpart: no copy, and the statement is not half ported."""
    code = IN_PLACE.format(cuda='torch.device("cuda", int(torch.backends.cudnn.enabled))')
    assert ported(code) == code


def test_the_ported_choice_runs_and_picks_the_cpu_here(ported, tmp_path):
    """No GPU, no torch_npu on this host: both arms are skipped, the fallback answers."""
    (tmp_path / "runner.py").write_text(ported(CLASS))
    done = python_in(tmp_path, "import runner; print(runner.Runner().device)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cpu"
