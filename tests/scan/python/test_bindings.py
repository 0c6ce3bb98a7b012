"""Import resolution: the names a module's imports bind."""

from __future__ import annotations

import ast

import pytest

from migrate.scan.python.bindings import collect_bindings, relative_bindings

CODE = """\
import torch as th
from torch.cuda import amp
from . import util
from .accelerator import get_accelerator as acc
from ..top import helper
from ...beyond import nothing
from .star import *


def f():
    from .inner import not_module_level
"""


def test_absolute_imports_bind_their_qualified_names_and_relative_ones_are_left_out():
    names = collect_bindings(ast.parse(CODE)).names
    assert {k: b.qualname for k, b in names.items()} == {"th": "torch", "amp": "torch.cuda.amp"}


@pytest.mark.parametrize(
    ("module", "is_package", "expected"),
    [
        (
            "pkg.sub.train",
            False,
            {
                "util": "pkg.sub.util",
                "acc": "pkg.sub.accelerator.get_accelerator",
                "helper": "pkg.top.helper",
            },
        ),
        (
            "pkg.sub",
            True,
            {
                "util": "pkg.sub.util",
                "acc": "pkg.sub.accelerator.get_accelerator",
                "helper": "pkg.top.helper",
            },
        ),
        ("pkg.train", False, {"util": "pkg.util", "acc": "pkg.accelerator.get_accelerator"}),
        ("", False, {}),
    ],
)
def test_module_level_relative_imports_resolve_against_the_files_module(module, is_package, expected):
    bindings = relative_bindings(ast.parse(CODE), module, is_package)
    assert {k: b.qualname for k, b in bindings.names.items()} == expected
    if "acc" in expected:
        assert bindings.local_for(expected["acc"]) == "acc"
