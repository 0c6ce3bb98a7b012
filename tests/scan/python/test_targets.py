"""Port targets on real snippets: what each target rewrites, what it leaves, and why."""

from __future__ import annotations

import textwrap

import pytest
from porting import port

from migrate.core.rules import default_rules
from migrate.fix.run import engine_scan

RULES = list(default_rules())
M = "(torch.npu if is_npu_available() else torch.cuda)"  # a script's device module


def findings(code: str, target: str):
    return engine_scan(textwrap.dedent(code), "t.py", "python", RULES, target)


DISPATCH = """\
    import torch

    def distributed_type():
        if torch.cuda.is_available():
            return "MULTI_GPU"
        elif is_npu_available():
            return "MULTI_NPU"
        return "NO"

    DEVICES = ("xpu", "cuda", "npu")
    dev = "npu" if is_torch_npu_available() else "cuda"
    """


@pytest.mark.parametrize("target", ["portable", "npu", "transfer"])
def test_code_that_handles_npu_is_left_alone_in_every_target(target):
    assert port(DISPATCH, target) == textwrap.dedent(DISPATCH)
    found = findings(DISPATCH, target)
    assert found and all(f.npu_aware and f.fix is None and f.category == "auto" for f in found)


def test_portable_keeps_cuda_working():
    out = port(
        """\
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
        if x.device.type == "cuda":
            torch.cuda.synchronize()
        devices = ["cuda", "cpu"]
        dev = torch.device(type="cuda", index=rank)
        """,
        "portable",
    )
    # the CUDA arm as written, the NPU's before the fallback
    chain = '"cuda" if torch.cuda.is_available() else "npu" if is_npu_available() else "cpu"'
    assert f"\ndevice = {chain}\n" in out
    twin = 'elif x.device.type == "npu":\n    torch.npu.synchronize()\n'
    assert 'if x.device.type == "cuda":\n    torch.cuda.synchronize()\n' + twin in out
    assert 'devices = ["cuda", "cpu", "npu"]' in out
    assert 'torch.device(type="npu" if is_npu_available() else "cuda", index=rank)' in out
    assert "torch_npu" not in out and 'hasattr(torch, "npu")' not in out
    assert out.count("def is_npu_available()") == 1  # a script: one check, defined once


def test_keyword_device_form_is_found_in_the_npu_target():
    code = 'import torch\nd = torch.device(type="cuda", index=r)\n'
    assert 'torch.device(type="npu", index=r)' in port(code, "npu")


def test_no_half_ported_condition():
    code = """\
        import torch
        big = torch.cuda.is_available() and torch.cuda.get_device_properties(0).total_memory > 2**34
        """
    for target in ("npu", "portable"):
        assert port(code, target) == textwrap.dedent(code), target  # nothing half done
        held = [f for f in findings(code, target) if f.rule == "MIG101"]
        assert held and all(f.category == "assisted" and "held back" in f.message for f in held)
    both = port(code, "npu", unsafe=True)
    assert "torch.npu.is_available() and torch.npu.get_device_properties(0)" in both


def test_bf16_support_check_is_ported_whole():
    # torch_npu's is_bf16_supported asks the chip (torch_npu._C._npu_is_bf16_supported, wheel
    # npu/utils.py): the same question as on CUDA, so the condition is ported in one go
    code = """\
        import torch
        dtype = "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "fp16"
        """
    assert "torch.npu.is_available() and torch.npu.is_bf16_supported()" in port(code, "npu")
    portable = port(code, "portable")
    assert f"(torch.cuda.is_available() or is_npu_available()) and {M}.is_bf16_supported()" in portable


def test_no_test_opens_a_branch_the_port_leaves_cuda_only():
    """accelerate 1.6 utils/bnb.py and state.py: the tests would widen to the NPU while the
    branches they open keep CUDA-only code (`.cuda(torch.cuda.current_device())` is manual,
    so is `get_device_capability()`): on an NPU that code would now run, where the original
    went to the next branch. The tests wait; a branch the port makes whole is opened."""
    code = """\
        import torch


        def quantize(model, model_device):
            if model_device.type == "cuda":
                model.cuda(torch.cuda.current_device())
            elif torch.cuda.is_available():
                model.to(torch.cuda.current_device())
            return model


        def precision(mixed_precision):
            if torch.cuda.is_available() and mixed_precision == "fp8":
                print(f"capability {torch.cuda.get_device_capability()} is too low")
                mixed_precision = "fp16"
            return mixed_precision
        """
    portable = port(code, "portable")
    assert 'if model_device.type == "cuda":\n        model.cuda(torch.cuda.current_device())' in portable
    opened = f"elif torch.cuda.is_available() or is_npu_available():\n        model.to({M}.current_device"
    assert opened in portable
    assert "if torch.cuda.is_available() and mixed_precision" in portable
    held = [f for f in findings(code, "portable") if f.line in (5, 13)]
    assert len(held) == 2 and all(f.category == "manual" for f in held)
    assert all("in the branch this test opens needs review" in f.message for f in held)
    npu = port(code, "npu")  # .cuda(i) has an NPU form there: that branch is ported whole
    assert 'if model_device.type == "npu":\n        model.npu(torch.npu.current_device())' in npu
    assert "if torch.cuda.is_available() and mixed_precision" in npu


def test_import_torch_npu_only_where_named():
    code = "import torch\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n"
    assert "import torch_npu" not in port(code, "npu")
    guarded = (
        "try:\n    import torch\nexcept ImportError:\n    torch = None\n\nx = torch.cuda.synchronize()\n"
    )
    assert port(guarded, "portable").startswith("try:\n    import torch\nexcept")


def test_transfer_imports_once_at_entry_points_and_fixes_only_comparisons():
    code = """\
        import torch

        def main():
            x = torch.zeros(2).cuda()
            if x.device.type == "cuda":
                torch.cuda.synchronize()

        if __name__ == "__main__":
            main()
        """
    out = port(code, "transfer")
    assert out.count("from torch_npu.contrib import transfer_to_npu  # noqa: F401") == 1
    assert 'x.device.type == "npu"' in out and ".cuda()" in out and "torch.cuda.synchronize()" in out
    library = port(code.split("if __name__")[0], "transfer")
    assert "transfer_to_npu" not in library
    assert port(out, "transfer") == out


def test_dispatch_over_other_backends_gains_an_npu_arm_beside_its_cuda_arm():
    """The CUDA arm stays; the NPU's own arm follows it (npu_work_arm.py), so the XPU arm
    still takes XPU hosts."""
    code = """\
        import torch

        def sync():
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            elif torch.xpu.is_available():
                torch.xpu.synchronize()
        """
    out = port(code, "portable")
    assert (
        "    if torch.cuda.is_available():\n        torch.cuda.synchronize()\n"
        "    elif is_npu_available():\n        torch.npu.synchronize()\n"
        "    elif torch.xpu.is_available():\n        torch.xpu.synchronize()"
    ) in out


def test_names_do_not_decide_what_is_ported():
    code = """\
        import torch

        def _setup_cuda_device(rank):
            torch.cuda.set_device(rank)

        use_cuda = torch.cuda.is_available()
        """
    out = port(code, "portable")
    assert f"{M}.set_device(rank)" in out
    assert "use_cuda = torch.cuda.is_available() or is_npu_available()" in out
    (inside,) = [f for f in findings(code, "portable") if f.line == 4]
    assert "`_setup_cuda_device` is named for CUDA" in inside.message  # a rename is advice


def test_a_cuda_class_with_an_npu_sibling_is_one_arm_of_a_dispatch():
    code = """\
        import torch

        class CUDA_Accelerator:
            def synchronize(self):
                torch.cuda.synchronize()

        class NPU_Accelerator:
            def synchronize(self):
                torch.npu.synchronize()
        """
    assert port(code, "portable") == textwrap.dedent(code)
    assert all(f.npu_aware for f in findings(code, "portable"))


def test_cuda_proven_by_the_condition_beside_a_generic_arm_stays():
    code = """\
        import torch

        device_type = "cuda" if (is_xla() and xla_on_gpu()) else state.device.type
        other = "cuda" if torch.cuda.is_available() else "cpu"
        """
    out = port(code, "portable")
    assert 'device_type = "cuda" if (is_xla() and xla_on_gpu()) else state.device.type' in out
    assert 'other = "cuda" if torch.cuda.is_available() else "npu" if is_npu_available() else "cpu"' in out


def test_portable_is_a_fixpoint_and_runs_on_cpu():
    torch = pytest.importorskip("torch")
    code = """\
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        x = torch.ones(2).to("cuda:0" if torch.cuda.is_available() else "cpu")
        y = torch.ones(2).cuda() if torch.cuda.is_available() else torch.ones(2)
        torch.cuda.manual_seed_all(0)
        with torch.autocast(device_type="cuda", enabled=False):
            z = x + y
        backend = "nccl"
        on_gpu = x.device.type == "cuda"
        """
    out = port(code, "portable")
    assert port(out, "portable") == out
    env = {"torch": torch}
    exec(compile(out, "t.py", "exec"), env)
    # off the NPU every value is the original's, "nccl" included
    assert env["device"] == "cpu" and env["backend"] == "nccl" and env["on_gpu"] is False
    assert env["z"].tolist() == [2.0, 2.0]


def test_device_string_containment_gains_npu():
    code = "import torch\ndevice = args.device\ndevice_type = 'cuda' if 'cuda' in device else 'cpu'\n"
    out = port(code, "portable")
    assert "if ('cuda' in device or 'npu' in device) else 'cpu'" in out
    env = {"torch": pytest.importorskip("torch"), "args": type("A", (), {"device": "cpu"})}
    exec(compile(out, "t.py", "exec"), env)
    assert env["device_type"] == "cpu"


@pytest.mark.parametrize(
    "target,new", [("npu", 'f"npu:{'), ("portable", "f\"{'npu' if is_npu_available() else 'cuda'}:{")]
)
def test_device_strings_meeting_in_a_comparison_are_rewritten_together(target, new):
    code = 'import torch\nd = torch.device(f"cuda:{n}")\nok = str(d) in {f"cuda:{i}" for i in range(8)}\n'
    out = port(code, target)
    assert out.count(new) == 2 and "cuda:" not in out


def test_portable_keeps_cuda_env_vars_and_adds_the_ascend_name_to_lists():
    code = 'import os\nENVS = ["CUDA_VISIBLE_DEVICES"]\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'
    out = port(code, "portable")
    assert 'ENVS = ["CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES"]' in out
    # a write keeps its line and sets the Ascend name on the next one
    assert 'os.environ["CUDA_VISIBLE_DEVICES"] = "0"\nos.environ["ASCEND_RT_VISIBLE_DEVICES"] = "0"\n' in out
    assert port(out, "portable") == out


def test_a_backend_spec_with_devices_gets_its_npu_arm():
    code = 'import torch.distributed as dist\ndist.init_process_group(backend="cpu:gloo,cuda:nccl")\n'
    out = port(code, "portable")
    assert 'backend="cpu:gloo,npu:hccl" if is_npu_available() else "cpu:gloo,cuda:nccl"' in out
    assert findings(out, "portable") == []  # the port's own NPU arm is not a finding
    assert 'backend="cpu:gloo,npu:hccl"' in port(code, "npu")


def test_rng_states_are_ported_whole_whatever_the_variables_are_called():
    code = """\
        import torch
        cuda_states = torch.cuda.get_rng_state_all()
        torch.cuda.set_rng_state_all(cuda_states)
        """
    out = port(code, "portable")
    assert f"cuda_states = {M}.get_rng_state_all()" in out
    assert f"{M}.set_rng_state_all(cuda_states)" in out


def test_backend_logic_beside_an_hccl_test_is_left_alone():
    code = """\
        import torch.distributed as torch_dist

        def broadcast(group_backend):
            is_hccl_backend = group_backend == "hccl"
            is_nccl_backend = group_backend == torch_dist.Backend.NCCL
            if is_hccl_backend:
                return 1
            elif is_nccl_backend:
                return 2
        """
    assert port(code, "portable") == textwrap.dedent(code)
    assert all(f.npu_aware for f in findings(code, "portable"))


def test_portable_comparisons_get_parentheses_only_where_they_bind_differently():
    code = """\
        import torch


        def check(x, device, ok):
            assert x.is_cuda
            if "cuda" in device:
                pass
            y = ok and "cuda" in device
            z = not x.is_cuda
            report(x.is_cuda, flag=x.is_cuda)
            return [x.is_cuda], x.is_cuda and ok
        """
    out = port(code, "portable")
    assert '    assert x.device.type in ("cuda", "npu")\n' in out
    assert '    if "cuda" in device or "npu" in device:\n' in out
    assert '    y = ok and ("cuda" in device or "npu" in device)\n' in out  # `or` under `and`
    assert '    z = x.device.type not in ("cuda", "npu")\n' in out  # not `not (... in ...)`
    assert 'report(x.device.type in ("cuda", "npu"), flag=x.device.type in ("cuda", "npu"))' in out
    assert '    return [x.device.type in ("cuda", "npu")], x.device.type in ("cuda", "npu") and ok' in out
    assert port(out, "portable") == out  # the port's own forms are not found again
