"""A module's family of device checks, found from its text or its tree, and the NPU member's
name, place and source (migrate/scan/check_family.py)."""

from __future__ import annotations

import ast

import pytest

from migrate.scan.check_family import (
    anchor,
    family_members,
    is_family,
    member_source,
    members_in_text,
    members_in_tree,
    npu_member,
    npu_name,
)

MMENGINE = """\
import torch


def get_max_cuda_memory(device=None) -> int:
    return 0


def is_cuda_available() -> bool:
    return torch.cuda.is_available()


def is_mlu_available() -> bool:
    return hasattr(torch, 'is_mlu_available') and torch.is_mlu_available()


def is_mps_available(check=True):  # a default: callable without arguments
    return False


def is_flax_available():
    return False


def is_xpu_available(device):  # a required argument: not a member
    return False
"""


def test_members_from_the_text_and_from_the_tree_agree():
    found = members_in_text(MMENGINE)
    assert found == ("is_cuda_available", "is_mlu_available", "is_mps_available")
    assert members_in_tree(ast.parse(MMENGINE)) == found
    assert is_family(found) and npu_member(found) is None
    assert npu_name(found) == "is_npu_available" and anchor(found) == "is_cuda_available"


@pytest.mark.parametrize(
    ("members", "family", "name", "after"),
    [
        (("is_torch_xla_available",), True, "is_torch_npu_available", "is_torch_xla_available"),
        (
            ("is_torch_cuda_available", "is_torch_mlu_available"),
            True,
            "is_torch_npu_available",
            "is_torch_cuda_available",
        ),
        (("is_xpu_available", "is_npu_available"), True, "is_npu_available", "is_xpu_available"),
        (("is_cuda_available",), False, "is_npu_available", "is_cuda_available"),  # CUDA alone: no family
        (("is_tpu_available", "is_habana_available"), True, "is_npu_available", "is_habana_available"),
    ],
)
def test_family_name_and_anchor(members, family, name, after):
    assert is_family(members) is family
    assert npu_name(members) == name
    assert anchor(members) == after


def test_a_member_nested_in_a_class_or_a_function_is_not_one():
    text = "class A:\n    def is_mlu_available(self):\n        return False\n"
    assert members_in_text(text) == () and members_in_tree(ast.parse(text)) == ()


def test_member_source_runs_with_and_without_torch_bound():
    bound = member_source("is_torch_npu_available", "th")
    assert bound.startswith("def is_torch_npu_available() -> bool:") and "getattr(th," in bound
    alone = member_source("is_npu_available", None)
    assert "import torch" in alone and "except ImportError:" in alone
    scope: dict = {}
    exec(alone, scope)  # noqa: S102 - the tool's own template
    assert scope["is_npu_available"]() is False  # no torch_npu here
    import torch

    scope = {"th": torch}
    exec(bound, scope)  # noqa: S102
    assert scope["is_torch_npu_available"]() is False


@pytest.mark.parametrize(
    "binding",
    [
        "is_npu_available = False\n",
        "class is_npu_available:\n    pass\n",
        "from os.path import exists as is_npu_available\n",
        "def is_npu_available(device):\n    return False\n",
        "import sys\nif sys.platform == 'linux':\n    def is_npu_available():\n        return False\n",
    ],
)
def test_a_module_binding_the_npu_name_otherwise_has_no_family(binding):
    """A member added beside `is_npu_available = False` would be shadowed by it (or shadow
    it): the files importing it would call a bool."""
    text = MMENGINE + "\n" + binding
    assert members_in_tree(ast.parse(text)) == ()
    assert family_members(text) == ()
    assert family_members(MMENGINE) == members_in_text(MMENGINE)  # nothing bound: the same


def test_the_family_found_from_text_is_the_trees():
    """A column-0 `def` in a docstring looks like a member to the text: the tree, which the
    port of that file reads, says whether the module has a family."""
    text = '"""Add yours:\n\ndef is_mlu_available():\n    ...\n"""\n\n\n'
    text += "def is_cuda_available():\n    return True\n"
    assert is_family(members_in_text(text))
    assert family_members(text) == ("is_cuda_available",)
    assert family_members("def is_mlu_available(:\n") == ()  # does not parse: no family
