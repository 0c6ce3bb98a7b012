"""NVIDIA-only code stays as written in every target (scan/python/left_as_written.py, via
awareness.py): a block that asks NVML, or runs Horovod, under its own CUDA test; a constant that names a
backend (ignite's ``NCCL = "nccl"``)."""

from __future__ import annotations

import textwrap
from functools import partial

import pytest

from migrate.core.rules import default_rules
from migrate.fix.rewrite import fix_text
from migrate.fix.run import engine_scan

RULES = list(default_rules())

# ignite's GPU-info metric and a Horovod launcher, reduced
CODE = """\
    import torch
    import torch.distributed as dist

    NCCL = "nccl"
    GLOO = dist.Backend.GLOO
    NCCL_BACKEND = dist.Backend.NCCL


    def gpu_info():
        if torch.cuda.is_available():
            import pynvml

            pynvml.nvmlInit()
            return pynvml.nvmlDeviceGetCount()
        return 0


    def setup(args):
        if args.horovod:
            import horovod.torch as hvd

            hvd.init()
            torch.cuda.set_device(hvd.local_rank())
        else:
            torch.cuda.set_device(args.rank)
    """


def port(code: str, target: str) -> str:
    scan = partial(engine_scan, target=target)
    text, _, _, error = fix_text(textwrap.dedent(code), "t.py", "python", RULES, scan, unsafe=False)
    assert error is None
    return text


@pytest.mark.parametrize("target", ["portable", "npu"])
def test_nvidia_only_blocks_and_backend_names_are_left_as_written(target):
    out = port(CODE, target)
    kept = textwrap.dedent(CODE)
    assert 'NCCL = "nccl"\n' in out
    assert "NCCL_BACKEND = dist.Backend.NCCL" not in out  # a choice of backend: ported
    assert kept[kept.index("def gpu_info") : kept.index("def setup")] in out
    assert "        torch.cuda.set_device(hvd.local_rank())\n" in out
    assert "torch.cuda.set_device(args.rank)" not in out  # the generic arm is still ported
    held = [f for f in engine_scan(textwrap.dedent(CODE), "t.py", "python", RULES, target) if f.line < 23]
    held = [f for f in held if f.line != 6]  # NCCL_BACKEND
    assert held and all(f.npu_aware and f.fix is None for f in held)


def test_a_horovod_model_class_is_left_as_written():
    # ignite distributed/comp_models/horovod.py: a computation model for Horovod only
    code = """\
        import torch
        import horovod.torch as hvd


        class HorovodModel:
            def setup(self):
                hvd.init()
                if torch.cuda.is_available():
                    torch.cuda.set_device(hvd.local_rank())
        """
    assert port(code, "portable") == textwrap.dedent(code)


def test_an_nvml_tool_class_is_left_as_written():
    # ignite metrics/gpu_info.py: the CUDA test sits before the NVML import, in one class
    code = """\
        import torch


        class GpuInfo:
            def __init__(self):
                if not torch.cuda.is_available():
                    raise RuntimeError("This contrib module requires available GPU")
                from pynvml.smi import nvidia_smi

                self.nvsmi = nvidia_smi.getInstance()
        """
    assert port(code, "portable") == textwrap.dedent(code)


def test_nvml_under_a_test_that_is_not_cudas_is_still_reported():
    code = "def log(args):\n    if args.gpu_stats:\n        import pynvml\n        pynvml.nvmlInit()\n"
    found = engine_scan(code, "t.py", "python", RULES, "portable")
    assert found and not any(f.npu_aware for f in found)


@pytest.mark.parametrize(
    ("target", "call"),
    [
        ("portable", 'dist.init_process_group("hccl" if is_npu_available() else NCCL)'),
        ("npu", 'dist.init_process_group("hccl")'),
    ],
)
def test_a_backend_constant_passed_to_init_is_ported_at_the_call(target, call):
    # the constant names the backend itself and stays; the call that starts NCCL with it
    # would fail on an NPU, so the port decides there
    code = """\
        import torch.distributed as dist

        NCCL = "nccl"
        GLOO = "gloo"


        def setup(backend=None):
            dist.init_process_group(NCCL)
            dist.init_process_group(GLOO)
        """
    out = port(code, target)
    assert 'NCCL = "nccl"\n' in out
    assert f"    {call}\n" in out
    assert "    dist.init_process_group(GLOO)\n" in out
    assert port(out, target) == out
