"""One "names the NPU" predicate (migrate/scan/npu_names.py), asked by the project context,
the helper finder and the NPU-aware regions alike."""

from __future__ import annotations

import ast
import textwrap

import pytest

from migrate.scan import project
from migrate.scan.npu_names import names_npu
from migrate.scan.python.pyfile import PyFile


@pytest.mark.parametrize(
    "text",
    [
        "is_npu_available",  # accelerate, transformers
        "NPU_Accelerator",  # deepspeed
        "NpuRMSNorm",
        "torch_npu",
        "hccl",
        'group_backend == "hccl"',
        "elif device_type == 'npu':",
        b"import torch_npu\n",
    ],
)
def test_names_that_name_the_npu(text):
    assert names_npu(text)


@pytest.mark.parametrize(
    "text",
    ["input", "get_input_embeddings", "INPUT_IDS", "snpus", "nccl", "cuda", b"inputs = x\n", ""],
)
def test_names_that_do_not(text):
    assert not names_npu(text)


def test_the_project_context_and_the_aware_regions_agree():
    code = textwrap.dedent(
        """\
        class NPU_Accelerator:
            pass


        def get_input_embeddings(x):
            return x


        def _hccl_backend():
            return "hccl"
        """
    )
    arms = project._npu_arm_names(code)
    assert arms == {"NPU_Accelerator", "_hccl_backend"}
    assert project._candidate(code.encode())
    assert not project._candidate(b"def get_input_embeddings(inputs):\n    return inputs\n")
    from migrate.scan.python import awareness

    f = PyFile.parse(code, "t.py")
    file_arms = {n.name for n in ast.walk(f.tree) if isinstance(n, ast.ClassDef | ast.FunctionDef)}
    assert {n for n in file_arms if names_npu(n)} == arms
    assert awareness._npu_sibling("CUDA_Accelerator", arms) == "NPU_Accelerator"
    assert awareness._npu_sibling("_nccl_backend", arms) == "_hccl_backend"
