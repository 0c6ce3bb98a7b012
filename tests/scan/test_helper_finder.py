"""A module's device helpers are found from their code, never from their names."""

from __future__ import annotations

import ast
import textwrap

import pytest

from migrate.core import device_helpers
from migrate.scan.helper_finder import find_helpers


def found(code: str) -> dict[str, tuple[str, bool]]:
    return {n: (h.kind, h.call) for n, h in find_helpers(ast.parse(textwrap.dedent(code))).items()}


def test_type_and_module_helpers_in_the_style_of_verl():
    code = """\
        import torch
        is_cuda_available = torch.cuda.is_available()
        is_npu_available = is_torch_npu_available()

        def which():
            if is_cuda_available:
                device = "cuda"
            elif is_npu_available:
                device = "npu"
            else:
                device = "cpu"
            return device

        def module():
            name = which()
            try:
                return getattr(torch, name)
            except AttributeError:
                return torch.cuda

        device_name = which()
        """
    assert found(code) == {
        "which": ("type", True),
        "module": ("module", True),
        "device_name": ("type", False),
    }


def test_a_module_helper_whose_last_arm_is_torch_cpu_in_the_style_of_ms_swift():
    code = """\
        import torch

        def get_torch_device():
            if is_torch_cuda_available():
                return torch.cuda
            elif is_torch_npu_available():
                return torch.npu
            else:
                return torch.cpu
        """
    assert found(code) == {"get_torch_device": ("module", True)}


def test_a_module_level_chain_read_by_a_function_in_the_style_of_mmengine():
    code = """\
        DEVICE = "cpu"
        if is_npu_available():
            DEVICE = "npu"
        elif is_cuda_available():
            DEVICE = "cuda"
        elif is_dipu_available():
            DEVICE = "dipu"

        def current() -> str:
            return DEVICE
        """
    assert found(code) == {"current": ("type", True)}


def test_device_generic_helpers_reach_the_npu_without_naming_it():
    code = """\
        import torch

        def accel():
            return torch.accelerator.current_accelerator().type

        def namespace():
            return torch.get_device_module(accel())
        """
    assert found(code) == {"accel": ("type", True), "namespace": ("module", True)}


@pytest.mark.parametrize(
    "code",
    [
        # CUDA only: ordinary code, the port rewrites it
        'import torch\ndef dev():\n    return "cuda" if torch.cuda.is_available() else "cpu"\n',
        # takes a required argument
        'def dev(kind):\n    return "npu" if kind else "cpu"\n',
        # returns something that is not a device
        "def count():\n    return npu_count() or 0\n",
        # may return None
        'def dev():\n    if is_npu():\n        return "npu"\n',
    ],
)
def test_what_is_not_a_helper(code):
    assert found(code) == {}


def test_the_ports_own_helpers_are_known_with_their_exact_kinds():
    text = device_helpers.module_text()
    got = find_helpers(ast.parse(text))
    assert {n: h.kind for n, h in got.items()} == {v: k for k, v in device_helpers.NAMES.items()}
    assert all(h.ours for h in got.values())
