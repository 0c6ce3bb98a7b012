"""MIG201/MIG202/MIG203/MIG310/MIG410: device and backend strings, .cuda(), is_cuda."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from migrate.core.rules import default_rules
from migrate.fix.rewrite import fix_text
from migrate.fix.run import engine_scan


def test_device_positions_are_found(found):
    code = """
    import torch
    import argparse
    dev = torch.device("cuda:1")
    x = torch.randn(2, device="cuda")
    y = x.to("cuda:0", non_blocking=True)
    sd = torch.load("m.pt", map_location="cuda:0")
    sd2 = torch.load("m.pt", "cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        pass
    with torch.autocast(device_type="cuda"):
        pass
    self.device = f"cuda:{local_rank}"
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    cfg = {"device": "cuda"}
    def run(model, device: str = "cuda"):
        if str(device).startswith("cuda"):
            pass
    """
    lines = sorted(line for rule, line in found(code) if rule == "MIG201")
    assert lines == [4, 5, 6, 7, 8, 9, 11, 13, 15, 15, 16, 17, 18]


def test_device_strings_outside_device_positions_are_left_alone(found):
    code = '''
    import torch, logging
    """Runs on cuda."""
    logging.info("moving the model to cuda")
    print(f"cuda:{rank} ready")
    parser.add_argument("--use_cuda", action="store_true", help="use cuda")
    name = "cuda"
    kernels = {"cuda": 1}
    # device = "cuda"
    '''
    assert found(code) == []


def test_comparisons_and_conditional_expressions(found, fixed):
    code = """
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if x.device.type == "cuda" or x.device.type in ("cuda", "xpu"):
        pass
    """
    out = fixed(code)
    assert 'device = "npu" if torch.npu.is_available() else "cpu"' in out
    assert 'x.device.type == "npu" or x.device.type in ("npu", "xpu")' in out


def test_fstring_and_quote_style_are_kept(fixed):
    code = '''
    import torch
    a = torch.device(f'cuda:{rank}')
    b = x.to(device=rf"cuda:{i}")
    c = torch.device("""cuda""")
    '''
    out = fixed(code)
    assert "torch.device(f'npu:{rank}')" in out
    assert 'x.to(device=rf"npu:{i}")' in out
    assert 'torch.device("""npu""")' in out


def test_cuda_method_and_is_cuda(found, fixed):
    code = """
    import torch
    model = Net().cuda()
    x = batch["x"].cuda(non_blocking=True)
    flag = x.is_cuda
    if args.cuda:
        torch.cuda.manual_seed(1)
    """
    rules = found(code, ("MIG202", "MIG203"))
    assert rules == [("MIG202", 3), ("MIG202", 4), ("MIG203", 5)]
    out = fixed(code)
    assert "Net().npu()" in out and ".npu(non_blocking=True)" in out and "x.is_npu" in out
    assert "if args.cuda:" in out


def test_nccl_backend(found, fixed):
    code = """
    import torch.distributed as dist
    from torch.distributed import init_process_group
    init_process_group("nccl")
    dist.init_process_group(backend="nccl", rank=0)
    backend = "nccl"
    if dist.get_backend() == "nccl":
        pass
    g = dist.new_group(ranks, backend="cuda:nccl,cpu:gloo")
    log("nccl timeout")
    """
    assert [ln for r, ln in found(code) if r == "MIG310"] == [4, 5, 6, 7, 9]
    out = fixed(code)
    assert 'init_process_group("hccl")' in out and 'backend="npu:hccl,cpu:gloo"' in out
    assert 'log("nccl timeout")' in out


def test_grad_scaler_without_device(found, fixed):
    code = """
    import torch
    from torch.amp import GradScaler
    s1 = torch.amp.GradScaler()
    s2 = GradScaler(init_scale=2.0**16)
    s3 = torch.amp.GradScaler("cuda")
    s4 = torch.amp.GradScaler(device="cpu")
    """
    assert [ln for r, ln in found(code) if r == "MIG410"] == [4, 5]
    out = fixed(code)
    assert 'torch.amp.GradScaler("npu")' in out
    assert 'GradScaler("npu", init_scale=2.0**16)' in out
    assert 's3 = torch.amp.GradScaler("npu")' in out
    assert 's4 = torch.amp.GradScaler(device="cpu")' in out


def test_suppression_comment(found):
    code = """
    import torch
    x = x.cuda()  # migrate: ignore[MIG202]
    y = y.cuda()  # migrate: ignore
    z = z.cuda()  # migrate: ignore[MIG999]
    """
    assert found(code, ("MIG202",)) == [("MIG202", 5)]


def test_format_templates_and_variables_used_as_devices(found, fixed):
    code = """
    import torch
    def load(args):
        loc = 'cuda:{}'.format(args.gpu)
        ckpt = torch.load(args.resume, map_location=loc)
        other = 'cuda:%d' % args.gpu
        x = x.to(other)
        label = 'cuda:{}'.format(3)
        print(label)
        return torch.device("cuda:{}".format(args.gpu))
    """
    assert [ln for r, ln in found(code) if r == "MIG201"] == [4, 6, 10]
    out = fixed(code)
    assert "loc = 'npu:{}'.format(args.gpu)" in out and "other = 'npu:%d' % args.gpu" in out
    assert "label = 'cuda:{}'.format(3)" in out
    assert 'torch.device("npu:{}".format(args.gpu))' in out


def test_a_decorator_line_is_scanned(found, ported):
    """The prefilter prunes the tree to the lines holding a CUDA token; a decorated def starts
    at its first decorator (ast gives the `def` line as its lineno), so
    `@torch.amp.custom_fwd(device_type="cuda")` was never looked at."""
    code = """
    import torch


    class Mul(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
        def forward(ctx, x):
            return x * 2
    """
    assert found(code) == [("MIG201", 7)]
    out = ported(code)
    amp = '"npu" if is_npu_available() else "cuda"'
    assert f"@torch.amp.custom_fwd(device_type={amp}, cast_inputs=torch.float32)" in out


def test_functools_partial_binds_the_arguments_of_the_function_it_wraps(found, ported):
    """kornia/utils/_compat.py: `partial(_custom_fwd, device_type="cuda")` is an amp device
    type (the autocast helper keeps "cuda" on a CPU host, as before: get_device_type() would
    turn custom_fwd's casts on under CPU autocast), and `partial(_autocast, "cuda")` binds
    autocast's device type positionally."""
    code = """
    from functools import partial

    from torch.amp import autocast as _autocast
    from torch.amp import custom_fwd as _custom_fwd

    custom_fwd = partial(_custom_fwd, device_type="cuda")
    autocast = partial(_autocast, "cuda")
    square = partial(pow, "cuda")
    """
    assert found(code) == [("MIG201", 7), ("MIG201", 8)]
    out = ported(code)
    assert 'custom_fwd = partial(_custom_fwd, device_type="npu" if is_npu_available() else "cuda")\n' in out
    assert 'autocast = partial(_autocast, "npu" if is_npu_available() else "cuda")\n' in out
    assert 'square = partial(pow, "cuda")\n' in out


def test_a_device_type_test_spelled_out_is_kept_in_step_with_the_port(ported):
    # trl's vLLM server: the device the port now produces is "npu:N", so a test of its type
    # part four lines below must accept "npu" too, or the NPU path is silently skipped
    code = """
    import torch
    def init(vllm_device):
        if vllm_device.split(":")[0] == "cuda":
            torch.cuda.set_device(vllm_device)
        if str(vllm_device).lower() != "cuda":
            pass
        if vllm_device.partition(":")[0] == "cuda":
            pass
        if name.split(":")[0] == "cuda":
            pass
    """
    out = ported(code)
    assert 'if vllm_device.split(":")[0] in ("cuda", "npu"):' in out
    assert 'if str(vllm_device).lower() not in ("cuda", "npu"):' in out
    assert 'if vllm_device.partition(":")[0] in ("cuda", "npu"):' in out
    assert 'if name.split(":")[0] == "cuda":' in out  # not a device by its name: a person decides
    assert ported(out) == out


def test_onnx_runtime_provider_keys_are_not_devices(found, fixed):
    """transformers' exporters name ONNX Runtime's execution providers "cpu", "cuda",
    "webgpu", "dml" (ort_fusions): not torch devices, so neither flagged nor rewritten;
    a torch device compared beside them still is."""
    code = """
    import torch
    if self.ort_fusions not in (None, "cpu", "cuda", "webgpu", "dml"):
        raise ValueError(self.ort_fusions)
    experts = "batched_mm" if ort_fusions == "cuda" else None
    if "cuda" in execution_providers:
        pass
    if device.type == "cuda" and "CUDAExecutionProvider" in available:
        pass
    if device in ("cpu", "cuda"):
        pass
    """
    assert sorted(line for rule, line in found(code) if rule == "MIG201") == [8, 10]
    text = fixed(code)
    assert '(None, "cpu", "cuda", "webgpu", "dml")' in text and 'ort_fusions == "cuda"' in text
    assert 'device.type == "npu"' in text


def test_the_provider_keys_of_the_transformers_exporters_stay(tmp_path):
    """The real files (transformers in this environment): --target npu and portable leave
    their ONNX Runtime provider keys as they are."""
    import importlib.util

    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("transformers is not installed")
    root = Path(list(spec.submodule_search_locations)[0]) / "exporters"
    kept = {
        "configs.py": 'if self.ort_fusions not in (None, "cpu", "cuda", "webgpu", "dml"):',
        "exporter_onnx.py": 'experts_implementation = "batched_mm" if ort_fusions == "cuda" else None',
        "onnxruntime_fusions.py": 'if ort_fusions == "cuda" and not is_onnxruntime_available("1.28.0"):',
    }
    present = {n: line for n, line in kept.items() if (root / n).is_file() and line in (root / n).read_text()}
    if not present:
        pytest.skip("this transformers has no ONNX Runtime exporter")
    for target in ("npu", "portable"):
        for name, line in present.items():
            text = (root / name).read_text()
            rules = list(default_rules())
            new, _, _, error = fix_text(
                text, name, "python", rules, partial(engine_scan, target=target), unsafe=False
            )
            assert error is None
            assert new.count(line) == text.count(line), (target, name)


def test_the_device_an_availability_arm_returns_follows_the_widened_test(ported):
    # an arm that does other CUDA work first gets its NPU twin; the "cuda" it returns is the
    # device the test chose, so on an NPU host the twin returns "npu"; where the arm cannot be
    # copied (a `with` of a CUDA-only context) the test is widened and the return follows it
    code = """
    import torch
    def pick():
        if torch.cuda.is_available():
            torch.cuda.set_device(0)
            return "cuda"
        name = "cuda"
        return "cpu"
    """
    out = ported(code)
    assert '    elif is_npu_available():\n        torch.npu.set_device(0)\n        return "npu"\n' in out
    assert '    name = "cuda"\n' in out  # outside the arm: not the device the test chose
    assert ported(out) == out
    widened = ported(code.replace("torch.cuda.set_device(0)", "torch.backends.cudnn.benchmark = True"))
    assert 'return "npu" if is_npu_available() else "cuda"' in widened
    assert ported(widened) == widened


def test_a_device_test_choosing_onnx_runtime_providers_is_not_widened():
    """kornia's lightglue_onnx: `elif device.type == "cuda": return ["CUDAExecutionProvider",
    ...]` widened to ("cuda", "npu") sent the NPU to CUDA's provider; torch's own test beside
    it still gets its NPU arm."""
    from porting import port

    code = """\
        import torch


        def providers(device):
            if device.type == "cpu":
                return ["CPUExecutionProvider"]
            elif device.type == "cuda":
                return ["CUDAExecutionProvider", "CPUExecutionProvider"]
            raise ValueError(device)


        def sync(device):
            if device.type == "cuda":
                torch.cuda.synchronize()
        """
    out = port(code)
    assert '    elif device.type == "cuda":\n        return ["CUDAExecutionProvider"' in out
    assert '    elif device.type == "npu":\n        torch.npu.synchronize()\n' in out


def test_a_device_with_its_index_by_concatenation_or_prefix_reaches_the_npu():
    """`"cuda:" + str(k)` (transformers' old model-parallel code, 105 ModelZoo files) and
    timm's `if device.startswith('cuda:'): torch.cuda.set_device(device)`."""
    from porting import port

    code = """\
        import torch


        def place(x, k, device):
            if device.startswith('cuda:'):
                torch.cuda.set_device(device)
            return x.to("cuda:" + str(k)), torch.device("cuda:" + str(k + 1))
        """
    npu = port(code, "npu")
    assert "device.startswith('npu:')" in npu and 'x.to("npu:" + str(k))' in npu
    assert 'torch.device("npu:" + str(k + 1))' in npu
    portable = port(code)
    assert "device.startswith(('cuda:', 'npu:'))" in portable
    npu_or_cuda = '("npu" if is_npu_available() else "cuda")'
    assert f'x.to({npu_or_cuda} + ":" + str(k))' in portable  # no parentheses `+` does not need
    assert f'torch.device({npu_or_cuda} + ":" + str(k + 1))' in portable
