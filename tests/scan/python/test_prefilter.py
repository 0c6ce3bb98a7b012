"""The prefilter keeps scans fast: it must stay sound and stay selective."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from migrate.core.kinds import Token
from migrate.core.rules import default_rules
from migrate.scan.python.prefilter import Prefilter, minimal_tokens
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


@pytest.mark.parametrize(
    "snippet",
    [
        b"x = 1\nfrom flash_attn import f  # at the end of the file, no newline",
        b"import os\r\nimport flash_attn\r\nx = 1\r\n",
        b"try: import apex\nexcept ImportError: apex = None\n",
        b"_supports_flash_attn = True\nfrom x import flash_attn\n",
        b"y = (x.\n    cuda())",  # a confirming regex that spans lines stays a whole-file search
    ],
)
def test_line_confined_checks_find_tokens_anywhere(prefilter, snippet):
    assert prefilter.search(snippet)
    assert Prefilter(prefilter.tokens, automaton=False).search(snippet)


def test_automaton_and_loops_agree_on_real_sources(prefilter):
    """The Aho-Corasick pass and the per-anchor loop give the same answer on every file of
    installed packages (torch and transformers hold CUDA code; most files hold none), and
    the same literal offsets."""
    loops = Prefilter(prefilter.tokens, automaton=False)
    specs = [importlib.util.find_spec(name) for name in ("transformers", "torch")]
    roots = [Path(spec.origin).parent for spec in specs if spec is not None and spec.origin]
    if not roots:
        pytest.skip("neither transformers nor torch is installed")
    files = [p for root in roots for p in sorted(root.rglob("*.py"))[:1500]]
    passed = 0
    for path in files:
        data = path.read_bytes()
        assert prefilter.search(data) == loops.search(data), path
        passed += prefilter.search(data)
        if b"cuda" in data[:20000]:
            text = data[:20000].decode("utf-8", "replace")
            assert sorted(prefilter.hit_offsets(text)) == sorted(loops.hit_offsets(text)), path
    assert 0 < passed < len(files)


def test_a_token_read_in_code_is_kept_beside_a_shorter_one_read_only_in_strings():
    """`is_cuda_available` (the family rule, read in code) was dropped for `cuda` (read only
    in strings): a package `__init__.py` importing only that name was skipped, and its users
    imported the NPU member from it."""
    tokens = {Token("cuda", context="strings"), Token("is_cuda_available", context="code")}
    assert {t.literal for t in minimal_tokens(tokens)} == {"cuda", "is_cuda_available"}
    assert [
        t.literal for t in minimal_tokens({Token("cuda"), Token("is_cuda_available", context="code")})
    ] == ["cuda"]
    prefilter = RuleSet(default_rules()).prefilter("pkg/__init__.py", "portable")
    assert prefilter.search(b"from .utils import is_cuda_available\n", code=True)
