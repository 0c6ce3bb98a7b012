"""The CUDA arm of a vendor chain gains an NPU twin before it and stays as written, as
ComfyUI's model_management.py was ported upstream (migrate/scan/python/npu_work_arm.py)."""

from __future__ import annotations

import pytest

# ComfyUI's get_total_memory before its NPU port (comfy/model_management.py), shortened
COMFY = """
import torch

def is_intel_xpu():
    return False

def get_total_memory(dev):
    if dev.type == "cpu" or dev.type == "mps":
        mem_total = 1
    elif is_intel_xpu():
        stats = torch.xpu.memory_stats(dev)
        mem_total = torch.xpu.get_device_properties(dev).total_memory
    else:
        stats = torch.cuda.memory_stats(dev)
        mem_reserved = stats["reserved_bytes.all.current"]
        _, mem_total_cuda = torch.cuda.mem_get_info(dev)
        mem_total = mem_total_cuda
    return mem_total
"""


def test_the_cuda_else_of_a_vendor_chain_gets_an_npu_twin_before_it(ported):
    out = ported(COMFY)
    assert (
        "    elif is_npu_available():\n"
        "        stats = torch.npu.memory_stats(dev)\n"
        '        mem_reserved = stats["reserved_bytes.all.current"]\n'
        "        _, mem_total_npu = torch.npu.mem_get_info(dev)\n"
        "        mem_total = mem_total_npu\n"
        "    else:\n"
        "        stats = torch.cuda.memory_stats(dev)\n"
    ) in out
    assert "_, mem_total_cuda = torch.cuda.mem_get_info(dev)\n        mem_total = mem_total_cuda\n" in out
    assert ported(out) == out


def test_a_cuda_elif_after_another_vendor_gets_its_twin_with_the_files_check(ported):
    code = """
    import torch
    from transformers.utils import is_torch_xpu_available

    def empty_cache(x):
        if is_torch_xpu_available():
            torch.xpu.empty_cache()
        elif torch.cuda.is_available():
            torch.cuda.empty_cache()
            x = x.cuda()
            torch.cuda.set_device("cuda:0")
        return x
    """
    out = ported(code)
    assert "from transformers.utils import is_torch_npu_available, is_torch_xpu_available\n" in out
    assert (
        "    elif is_torch_npu_available():\n"
        "        torch.npu.empty_cache()\n"
        "        x = x.npu()\n"
        '        torch.npu.set_device("npu:0")\n'
        "    elif torch.cuda.is_available():\n"
        "        torch.cuda.empty_cache()\n"
    ) in out
    assert ported(out) == out


def test_arms_without_an_npu_spelling_or_another_vendor_are_ported_in_place(ported):
    # no other vendor in the chain: the twin after CUDA's arm, as diffusers' free_memory()
    plain = ported("""
    import torch
    def f():
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    """)
    assert "    elif is_npu_available():\n        torch.npu.empty_cache()\n" in plain
    assert "torch.cuda.is_available() or" not in plain and ported(plain) == plain
    # one with no NPU spelling: the usual in-place port
    cudnn = ported("""
    import torch
    def f():
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
            torch.backends.cudnn.benchmark = True
    """)
    assert "elif" not in cudnn and "(torch.npu if is_npu_available() else torch.cuda).empty_cache()" in cudnn
    # a CUDA mention with no NPU spelling (cudnn, a comment about CUDA): no copy
    for line in (
        "torch.backends.cudnn.benchmark = True",
        'print("cuda memory")',  # a device string? a person decides
        "run()  # on CUDA",
        'torch.cuda.nvtx.range_push("step")',  # called torch.npu.mstx on the NPU
    ):
        out = ported(f"""
        import torch
        def f(dev):
            if is_intel_xpu():
                torch.xpu.empty_cache()
            else:
                torch.cuda.empty_cache()
                {line}
        """)
        assert "elif" not in out, line
    # a name the arm assigns but code after the chain reads keeps its name in the copy, and
    # so does one whose NPU name the function already uses
    out = ported(COMFY.replace("    return mem_total\n", "    return mem_total_cuda\n"))
    assert "        _, mem_total_cuda = torch.npu.mem_get_info(dev)\n" in out
    out = ported(COMFY.replace("    return mem_total\n", "    mem_total_npu = 0\n    return mem_total\n"))
    assert "        _, mem_total_cuda = torch.npu.mem_get_info(dev)\n" in out


def test_the_rules_it_may_respell_are_rules_of_the_table():
    from migrate.core.rules import default_rules
    from migrate.scan.python.npu_respell import COPYABLE

    rules = {r.code: r for r in default_rules()}
    assert COPYABLE <= set(rules)
    assert rules["MIG101"].name == "torch-cuda-api" and "same name" in rules["MIG101"].message


def test_a_first_cuda_arm_beside_other_vendors_gets_its_twin_after_it(ported):
    # torchchat's generate.py: one `if` per vendor in a row, and a chain that asks CUDA first
    code = """
    import torch

    def report():
        if torch.cuda.is_available():
            print(f"Memory used: {torch.cuda.max_memory_reserved() / 1e9:.02f} GB")
        if torch.xpu.is_available():
            print(f"Memory used: {torch.xpu.max_memory_reserved() / 1e9:.02f} GB")

    def reset():
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        elif torch.xpu.is_available():
            torch.xpu.reset_peak_memory_stats()
    """
    out = ported(code)
    assert (
        '        print(f"Memory used: {torch.cuda.max_memory_reserved() / 1e9:.02f} GB")\n'
        "    if is_npu_available():\n"
        '        print(f"Memory used: {torch.npu.max_memory_reserved() / 1e9:.02f} GB")\n'
        "    if torch.xpu.is_available():\n"
    ) in out
    assert (
        "        torch.cuda.reset_peak_memory_stats()\n"
        "    elif is_npu_available():\n"
        "        torch.npu.reset_peak_memory_stats()\n"
        "    elif torch.xpu.is_available():\n"
    ) in out
    assert ported(out) == out
    # a message naming CUDA or the GPU names the NPU in the copy, as engineers reword it
    about = ported(code.replace("Memory used: {torch.cuda", "CUDA memory: {torch.cuda"))
    assert '    if is_npu_available():\n        print(f"NPU memory: {torch.npu.max' in about
    gpus = ported(
        code.replace(
            'f"Memory used: {torch.cuda.max_memory_reserved() / 1e9:.02f} GB"',
            '"GPUs:", torch.cuda.device_count()',
        )
    )
    assert '        print("NPUs:", torch.npu.device_count())\n' in gpus


def test_the_twin_takes_the_files_newline_as_the_rest_of_the_port_does(ported):
    first, rest = COMFY.lstrip("\n").split("\n", 1)
    # mixed endings (first break LF, later ones CRLF): the new `elif` line ends as the
    # helper defined beside it does, with the file's first break; the copied lines keep theirs
    out = ported(first + "\n" + rest.replace("\n", "\r\n"))
    assert "    elif is_npu_available():\n        stats = torch.npu.memory_stats(dev)\r\n" in out
    assert "def is_npu_available() -> bool:\n" in out
    crlf = ported(COMFY.replace("\n", "\r\n"))
    assert "    elif is_npu_available():\r\n        stats = torch.npu.memory_stats(dev)\r\n" in crlf
    assert "\n" not in crlf.replace("\r\n", "")


@pytest.mark.parametrize(
    "check",
    [
        "is_tpu_available()",  # TPU through torch_xla
        "xm.xla_device().type == 'xla'",
        "is_habana_available()",  # Habana Gaudi (hpu)
        "torch.hpu.is_available()",
        "is_cambricon_available()",  # Cambricon (mlu)
        "torch.mlu.is_available()",
    ],
)
def test_a_cuda_elif_after_tpu_habana_or_cambricon_gets_its_twin_as_after_xpu(ported, check):
    code = f"""
    import torch

    def empty_cache(x):
        if {check}:
            x = x.to("cpu")
        elif torch.cuda.is_available():
            torch.cuda.empty_cache()
            x = x.cuda()
        return x
    """
    out = ported(code)
    assert (
        "    elif is_npu_available():\n"
        "        torch.npu.empty_cache()\n"
        "        x = x.npu()\n"
        "    elif torch.cuda.is_available():\n"
        "        torch.cuda.empty_cache()\n"
        "        x = x.cuda()\n"
    ) in out
    assert ported(out) == out


# ChatTTS's select_device before its NPU port (ChatTTS/utils/gpu.py), shortened
CHATTTS = """
import torch

def select_device(min_memory=2047):
    if torch.cuda.is_available():
        selected_gpu = 0
        max_free_memory = -1
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            free_memory = props.total_memory - torch.cuda.memory_reserved(i)
            if max_free_memory < free_memory:
                selected_gpu = i
                max_free_memory = free_memory
        if max_free_memory < min_memory:
            device = torch.device("cpu")
        else:
            device = torch.device(f"cuda:{selected_gpu}")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    return device
"""


def test_an_arm_with_a_loop_and_an_if_is_copied_whole_with_its_device_fstring(ported):
    """ChatTTS #777's engineers added this `elif` twin: the same pick by free memory."""
    out = ported(CHATTTS)
    twin = (
        "    elif is_npu_available():\n"
        "        selected_gpu = 0\n"
        "        max_free_memory = -1\n"
        "        for i in range(torch.npu.device_count()):\n"
        "            props = torch.npu.get_device_properties(i)\n"
        "            free_memory = props.total_memory - torch.npu.memory_reserved(i)\n"
        "            if max_free_memory < free_memory:\n"
        "                selected_gpu = i\n"
        "                max_free_memory = free_memory\n"
        "        if max_free_memory < min_memory:\n"
        '            device = torch.device("cpu")\n'
        "        else:\n"
        '            device = torch.device(f"npu:{selected_gpu}")\n'
        "    elif torch.backends.mps.is_available():\n"
    )
    assert twin in out
    assert "        for i in range(torch.cuda.device_count()):\n" in out  # the CUDA arm as it was
    assert ported(out) == out


TRY_BLOCK = "            try:\n                pass\n            except OSError:\n                raise\n"


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("props.total_memory - ", "props.major - "),  # a field the NPU's object may lack
        ("free_memory = props.total_memory", "free_memory = len(str(props)) + props.total_memory"),
        ("            if max_free_memory", TRY_BLOCK + "            if max_free_memory"),
    ],
)
def test_an_arm_reading_another_field_or_holding_a_try_is_ported_in_place(ported, change, why):
    out = ported(CHATTTS.replace(change, why))
    assert "elif is_npu_available():" not in out


# timm's train.py and validate.py before #2109, reduced
TIMM = """
import torch

def step(args, device, model, x):
    y = model(x)
    if args.synchronize_step and device.type == 'cuda':
        torch.cuda.synchronize()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    else:
        y = y.cpu()
    if 'cuda' in args.device:
        torch.cuda.empty_cache()
    return y
"""


def test_a_device_type_test_gets_its_twin_for_the_npu_after_it(ported):
    """timm #2109's engineers kept `if device.type == 'cuda':` and added the NPU's `elif`."""
    out = ported(TIMM)
    assert (
        "    if args.synchronize_step and device.type == 'cuda':\n"
        "        torch.cuda.synchronize()\n"
        "    elif args.synchronize_step and device.type == 'npu':\n"
        "        torch.npu.synchronize()\n"
    ) in out
    assert (
        '    if device.type == "cuda":\n'
        "        torch.cuda.empty_cache()\n"
        '    elif device.type == "npu":\n'
        "        torch.npu.empty_cache()\n"
        "    else:\n"
    ) in out
    assert "    elif 'npu' in args.device:\n        torch.npu.empty_cache()\n" in out
    assert ported(out) == out


@pytest.mark.parametrize(
    "test",
    [
        "ready() and device.type == 'cuda'",  # a call the twin would make again
        "device.type == 'cuda' and ready",  # the CUDA test is not the last one
        "device.type != 'cuda'",
        "str(device) == 'cuda'",
        "'cuda' not in args.device",
    ],
)
def test_other_tests_of_the_device_type_are_not_twinned(ported, test):
    out = ported(TIMM.replace("args.synchronize_step and device.type == 'cuda'", test))
    assert "        torch.npu.synchronize()\n" not in out


def test_a_device_type_test_whose_arm_does_nothing_cudas_is_widened_instead(ported):
    """torchtune: `if self._device.type == "cuda": log_memory_stats(...)` needs no copy."""
    out = ported("""
    import torch

    def log(device, stats):
        if device.type == "cuda":
            stats(device)
    """)
    assert "elif" not in out and 'if device.type in ("cuda", "npu"):\n' in out


# mmengine's get_comm_device before #572, reduced
COMM = """
import torch
from torch import distributed as torch_dist

def get_comm_device(group=None):
    backend = torch_dist.get_backend(group)
    if backend == torch_dist.Backend.NCCL:
        return torch.device('cuda', torch.cuda.current_device())
    elif backend == 'cncl':
        return torch.device('mlu', torch.mlu.current_device())
    else:
        return torch.device('cpu')

def sync(backend):
    if backend == "nccl":
        torch.cuda.synchronize()
"""


def test_a_backend_test_gets_its_twin_for_hccl_after_it(ported):
    """mmengine #572's engineers kept NCCL's arm and added `backend == 'hccl'` for the NPU."""
    out = ported(COMM)
    assert (
        "    if backend == torch_dist.Backend.NCCL:\n"
        "        return torch.device('cuda', torch.cuda.current_device())\n"
        "    elif backend == 'hccl':\n"
        "        return torch.device('npu', torch.npu.current_device())\n"
        "    elif backend == 'cncl':\n"
    ) in out
    assert '    if backend == "nccl":\n        torch.cuda.synchronize()\n    elif backend == "hccl":\n' in out
    assert "is_npu_available" not in out  # the backend decides, as it did for CUDA
    assert ported(out) == out


def test_a_backend_test_whose_arm_does_nothing_cudas_is_not_twinned(ported):
    out = ported(COMM.replace("        torch.cuda.synchronize()", "        print(backend)"))
    assert 'elif backend == "hccl"' not in out


def test_a_device_type_test_asserting_availability_gets_its_twin(ported):
    """timm #2109: `if device_type == 'cuda': assert torch.cuda.is_available(), f'CUDA is
    not available ...'`; its engineers added the NPU's assert, worded for the NPU."""
    out = ported("""
    import torch

    def init(device):
        device_type = device.split(':')[0]
        if device_type == 'cuda':
            assert torch.cuda.is_available(), f'CUDA is not available but {device} was specified.'
        return device_type
    """)
    assert (
        "    elif device_type == 'npu':\n"
        "        assert torch.npu.is_available(), f'NPU is not available but {device} was specified.'\n"
    ) in out
    assert "assert torch.cuda.is_available(), f'CUDA is not" in out  # CUDA's arm as written


def test_a_widened_check_inside_an_or_needs_no_parentheses():
    """diffusers' `has_supported_fp16_accelerator = torch.cuda.is_available() or
    torch.backends.mps.is_available()`: the NPU's check joins the `or` as one more operand."""
    from porting import port

    code = (
        "import torch\nfrom transformers import is_torch_npu_available\n\n"
        "fp16 = torch.cuda.is_available() or torch.backends.mps.is_available()\n"
        "both = torch.cuda.is_available() and torch.backends.mps.is_available()\n"
    )
    out = port(code)
    assert "fp16 = torch.cuda.is_available() or is_torch_npu_available() or torch.backends.mps" in out
    assert "both = (torch.cuda.is_available() or is_torch_npu_available()) and torch.backends" in out
    assert port(out) == out


def test_a_backend_test_held_in_a_name_gets_its_hccl_twin(ported):
    """mmengine's _all_gather_object tests `is_nccl_backend` (bound once above); on the NPU
    the backend is HCCL, so a port inside the NCCL arm never runs there: the twin asks for
    HCCL (as mmengine's MUSA engineers added `elif is_mccl_backend:`)."""
    code = (
        "import torch\n"
        "from torch import distributed as torch_dist\n\n\n"
        "def gather(obj, group=None):\n"
        "    group_backend = torch_dist.get_backend(group)\n"
        "    is_nccl_backend = group_backend == torch_dist.Backend.NCCL\n"
        "    if is_nccl_backend:\n"
        "        obj = obj.to(torch.device('cuda', torch.cuda.current_device()))\n"
        "    return obj\n\n\n"
        "def twice(obj, flag):\n"
        "    is_nccl = flag == 'nccl'\n"
        "    is_nccl = is_nccl or obj is None\n"
        "    if is_nccl:\n"
        "        obj = obj.cuda()\n"
        "    return obj\n"
    )
    out = ported(code)
    assert (
        "    if is_nccl_backend:\n"
        "        obj = obj.to(torch.device('cuda', torch.cuda.current_device()))\n"
        "    elif group_backend == 'hccl':\n"
        "        obj = obj.to(torch.device('npu', torch.npu.current_device()))\n"
    ) in out
    assert "elif flag" not in out  # a name bound twice is not a comparison to repeat
    assert ported(out) == out
