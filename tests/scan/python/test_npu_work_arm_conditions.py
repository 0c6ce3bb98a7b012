"""Twins of a CUDA arm outside a vendor chain (migrate/scan/python/npu_work_arm.py): a lone
``if torch.cuda.is_available():`` arm, and an ``and`` of CUDA's availability, a device-type
test and plain operands; each ported twice (the second run changes nothing)."""

from __future__ import annotations

from porting import port
from running import python_in


def test_a_lone_cuda_arm_gets_its_twin_unless_the_project_spells_the_module():
    """diffusers' engineers: `if torch.cuda.is_available(): torch.cuda.empty_cache()` gained
    `elif is_torch_npu_available(): torch_npu.npu.empty_cache()`; also before a plain
    `else:`. A project with its own device-module helper (verl's get_torch_device) keeps
    calling through it, the test widened."""
    code = """\
        import gc

        import torch
        from transformers import is_torch_npu_available


        def free_memory():
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()


        def count():
            if torch.cuda.is_available():
                n = torch.cuda.device_count()
            else:
                n = 0
            return n
        """
    out = port(code)
    assert (
        "    if torch.cuda.is_available():\n        torch.cuda.empty_cache()\n"
        "    elif is_torch_npu_available():\n        torch.npu.empty_cache()\n"
    ) in out
    assert (
        "        n = torch.cuda.device_count()\n    elif is_torch_npu_available():\n"
        "        n = torch.npu.device_count()\n    else:\n        n = 0\n"
    ) in out
    assert port(out) == out
    verl = """\
        import torch


        def get_torch_device():
            npu = getattr(torch, "npu", None)
            return npu if npu is not None and npu.is_available() else torch.cuda


        def sync():
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        """
    kept = port(verl)
    assert "elif" not in kept and "        get_torch_device().synchronize()\n" in kept


def test_an_and_of_availability_and_a_device_test_gets_its_twin_with_each_operand_spelled(tmp_path):
    """timm's validate.py: `if torch.cuda.is_available() and 'cuda' in args.device:
    torch.cuda.empty_cache()`; its engineers added `elif "npu" in args.device and
    torch.npu.is_available(): torch.npu.empty_cache()`. A call that is not CUDA's (it would
    run twice) or a test spanning lines keeps today's in-place port."""
    code = """\
        import torch


        def run(args, device):
            if torch.cuda.is_available() and 'cuda' in args.device:
                torch.cuda.empty_cache()
            if device.type == 'cuda' and torch.cuda.is_available():
                torch.cuda.synchronize()
            if args.cuda and torch.cuda.is_available():
                torch.cuda.manual_seed(0)
            return 'ran'
        """
    out = port(code)
    assert (
        "    if torch.cuda.is_available() and 'cuda' in args.device:\n        torch.cuda.empty_cache()\n"
        "    elif is_npu_available() and 'npu' in args.device:\n        torch.npu.empty_cache()\n"
    ) in out
    assert "    elif device.type == 'npu' and is_npu_available():\n        torch.npu.synchronize()\n" in out
    assert "    elif args.cuda and is_npu_available():\n        torch.npu.manual_seed(0)\n" in out
    assert port(out) == out
    (tmp_path / "m.py").write_text(out)
    run = python_in(
        tmp_path,
        "import types, torch, m; a = types.SimpleNamespace(device='cpu', cuda=False); "
        "print(m.run(a, torch.device('cpu')))",
    )
    assert run.returncode == 0 and run.stdout == "ran\n", run.stderr
    for kept in (
        "ready() and torch.cuda.is_available()",
        "(torch.cuda.is_available()\n                and ok)",
    ):
        other = port(code.replace("torch.cuda.is_available() and 'cuda' in args.device", kept))
        assert "        torch.npu.empty_cache()\n" not in other, kept


def test_a_vendor_chain_inside_an_else_gets_the_twin_not_the_outer_chain():
    """ComfyUI's get_total_memory nests its vendor chain in the else of a CPU/MPS test: the
    twin goes beside the inner CUDA arm; the outer else is never copied whole."""
    code = """\
        import torch


        def is_intel_xpu():
            return False


        def get_total_memory(dev, directml_enabled=False):
            if dev.type == 'cpu' or dev.type == 'mps':
                mem_total = 1
            else:
                if directml_enabled:
                    mem_total = 2
                elif is_intel_xpu():
                    mem_total = torch.xpu.get_device_properties(dev).total_memory
                else:
                    stats = torch.cuda.memory_stats(dev)
                    _, mem_total = torch.cuda.mem_get_info(dev)
            return mem_total
        """
    out = port(code)
    assert out.count("directml_enabled:") == 1
    assert (
        "        elif is_npu_available():\n            stats = torch.npu.memory_stats(dev)\n"
        "            _, mem_total = torch.npu.mem_get_info(dev)\n        else:\n"
    ) in out
    assert port(out) == out
