"""NVIDIA-only code stays as written in every target (scan/python/left_as_written.py, via
awareness.py): a block that asks NVML, or runs Horovod, under its own CUDA test; a constant that names a
backend (ignite's ``NCCL = "nccl"``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from porting import port

from migrate.core.rules import default_rules
from migrate.fix.run import engine_scan

RULES = list(default_rules())
REPO = Path(__file__).resolve().parents[3]

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


@pytest.mark.parametrize("target", ["portable", "npu"])
def test_a_predicate_named_for_its_vendor_keeps_answering_for_it(target):
    # mmengine device/utils.py: get_device() asks is_cuda_available() first; ported, it
    # would say True on an NPU and get_device() would answer "cuda" there
    code = """\
        import torch


        def is_cuda_available() -> bool:
            return torch.cuda.is_available()


        def _has_nccl():
            return torch.distributed.is_nccl_available()


        def device_ready():
            return torch.cuda.is_available()
        """
    out = port(code, target)
    kept = textwrap.dedent(code)
    assert kept[kept.index("def is_cuda") : kept.index("def device_ready")] in out
    assert "def device_ready():\n    return torch.cuda.is_available()\n" not in out


ROUTER = """\
    import os


    def visible_devices():
        try:
            import torch
        except ImportError:
            return []
        return list(range(torch.cuda.device_count()))
    """


def test_a_file_that_imports_torch_only_in_a_function_gets_no_helper(tmp_path):
    # MinerU's router: a pasted helper would read an unbound `torch` at call time
    out = port(ROUTER, "portable")
    assert "def is_npu_available" not in out and "get_device" not in out
    assert "torch.cuda.device_count()" in out  # left to a person
    compile(out, "t.py", "exec")


def test_a_package_file_with_optional_torch_imports_no_helper_module(tmp_path):
    # diffusers' utils/torch_utils.py imports torch under `if is_torch_available():`; an
    # unconditional `from .._device import ...` (which imports torch) would make it required
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text("import torch\n\n\ndef sync():\n    torch.cuda.synchronize()\n")
    optional = "import importlib.util\n\nif importlib.util.find_spec('torch'):\n    import torch\n\n\n"
    optional += "def sync():\n    torch.cuda.synchronize()\n"
    (pkg / "utils.py").write_text(optional)
    done = subprocess.run(
        [sys.executable, "-m", "migrate", "apply", str(tmp_path), "--no-cache"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode in (0, 1), done.stderr
    assert (pkg / "utils.py").read_text() == optional
    assert "from pkg._device import get_device_module" in (pkg / "model.py").read_text()


# diffusers' attention_processor.py (xformers) and a model's flash-attn switch, reduced
CUDA_ONLY_LIBRARIES = """\
    import torch

    try:
        import xformers.ops
    except ImportError:
        xformers = None


    def use_xformers(valid):
        if valid:
            if xformers is None:
                raise ModuleNotFoundError("install xformers")
            elif not torch.cuda.is_available():
                raise ValueError("xformers' memory efficient attention is only available for GPU")
            else:
                q = torch.randn(1, 2, 1, 40, device="cuda")
                return xformers.ops.memory_efficient_attention(q, q, q)


    def attention(q, use_flash_attn):
        if torch.cuda.is_available() and use_flash_attn:
            from flash_attn import flash_attn_func

            return flash_attn_func(q, q, q)
        return torch.nn.functional.scaled_dot_product_attention(q, q, q)


    def sync():
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    """


@pytest.mark.parametrize("target", ["portable", "npu"])
def test_a_cuda_test_guarding_xformers_or_flash_attn_is_left_as_written(target):
    """Opened to the NPU, diffusers' guard would let an NPU host into xformers' CUDA kernels,
    and the flash-attn arm would replace the SDPA fallback the NPU runs; a CUDA block
    beside them without such a library is still ported."""
    out = port(CUDA_ONLY_LIBRARIES, target)
    code = textwrap.dedent(CUDA_ONLY_LIBRARIES)
    for kept in ("def use_xformers", "def attention"):
        block = code[code.index(kept) : code.index("\n\n\n", code.index(kept))]
        assert block in out, kept
    assert "torch.npu.synchronize()" in out
