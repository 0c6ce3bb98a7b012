"""The prefilter keeps scans fast: it must stay sound and stay selective."""

from __future__ import annotations

import pytest

from migrate.core.rules import default_rules
from migrate.scan.ruleset import RuleSet

RULESET = RuleSet(default_rules())

PLAIN_MODEL = b'''
"""A transformer block. Parameters are required to have requires_grad=True."""
import torch
from torch import nn

class Block(nn.Module):
    _supports_flash_attn = True  # an attribute name, not the flash_attn package

    def __init__(self, dim: int):
        super().__init__()
        self.rotary_emb = nn.Identity()
        self.proj = nn.Linear(dim, dim)
        self.proj.weight.requires_grad = False
        REQUIRED_KEYS = ["weight"]

    def forward(self, x):
        return self.proj(self.rotary_emb(x))
'''


@pytest.fixture(scope="module")
def prefilter():
    pf = RULESET.python("model.py").prefilter
    assert pf is not None, "a python rule yields no prefilter token: every file would be parsed"
    return pf


def test_plain_model_code_is_skipped(prefilter):
    assert not prefilter.search(PLAIN_MODEL)


@pytest.mark.parametrize(
    "snippet",
    [
        b"x = y.cuda()",
        b"import torch as th\nth.cuda.synchronize()",
        b"from flash_attn import f",
        b"dist.init_process_group('nccl')",
        b"os.environ['CUDA_VISIBLE_DEVICES'] = '0'",
        b"load(name='k', sources=['k.cu'])",
        b"torch.backends.cudnn.benchmark = True",
        b"m = nn.DataParallel(m)",
        b"import apex",
        b"subprocess.run(['nvidia-smi'])",
    ],
)
def test_cuda_code_passes(prefilter, snippet):
    assert prefilter.search(snippet)


def test_setup_py_dependency_lists_pass_only_for_setup_files():
    code = b'setup(install_requires=["flash-attn"])'
    assert RULESET.python("setup.py").prefilter.search(code)
