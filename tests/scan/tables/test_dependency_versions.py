"""Version verdicts shared by requirement files and setup.py (MIG750-MIG752)."""

from __future__ import annotations

import pytest

from migrate.core.rules import default_rules
from migrate.scan.tables.dependency_versions import pinned_release, verdict

RULES = {r.code: r for r in default_rules()}


@pytest.mark.parametrize(
    "text, others, want",
    [
        ("torch==2.1.0", {}, "2.14.0"),
        ("torch>=2.0,<2.4", {}, "2.14.0"),
        ("torch>=2.1", {}, None),
        ("torch", {}, None),
        ("torch==2.14.0+cpu", {}, None),
        ("torch~=2.14.0", {}, None),
        ("torch==2.6.0", {"torch-npu": "torch-npu==2.6.0.post3"}, None),
        ("torch==2.5.1", {"torch-npu": "torch-npu==2.6.0"}, "2.6.0"),
        ("torch==2.1.0", {"torch-npu": "torch-npu>=2.1"}, "2.14.0"),  # unpinned: the default
    ],
)
def test_torch_pin_follows_the_chosen_torch_npu(text, others, want):
    assert verdict(RULES["MIG750"], "torch", text, others) == want


@pytest.mark.parametrize(
    "name, text, flagged",
    [
        ("transformers", "transformers==4.30.2", True),
        ("transformers", "transformers<4.32", True),
        ("transformers", "transformers~=4.30", False),  # allows 4.32 and later
        ("transformers", "transformers>=4.0,!=4.32.0", False),
        ("accelerate", "accelerate>=0.18,<0.20", True),
        ("accelerate", "accelerate==0.21.*", False),
        ("deepspeed", "deepspeed==0.14.0", False),
        ("deepspeed", "deepspeed==0.9.5", True),
        ("numpy", "numpy==1.0", False),
    ],
)
def test_minimum_versions_with_npu_support(name, text, flagged):
    assert (verdict(RULES["MIG752"], name, text, {}) is not None) == flagged


def test_companion():
    rule = RULES["MIG751"]
    assert verdict(rule, "torch", "torch", {"torch": "torch"}) == "torch-npu==2.14.0"
    assert verdict(rule, "torch", "torch", {"torch": "torch", "torch-npu": "torch_npu"}) is None


def test_pinned_release():
    assert pinned_release("torch-npu==2.6.0.post3") == "2.6.0"
    assert pinned_release("torch-npu==2.1") == "2.1.0"
    assert pinned_release("torch-npu>=2.1") is None
