"""A test named for the backend or vendor it tests stays as written, its HCCL/NPU twin
beside it (written by npu_work_arm.py where the branch can be copied, else by a person:
scan/python/left_as_written.py vendor_tests, via awareness.py): mmengine dist/dist.py
before #1309, timm data/loader.py before #2109."""

from __future__ import annotations

import textwrap
from functools import partial

import pytest
from porting import port

from migrate.core.rules import default_rules
from migrate.fix.rewrite import fix_text
from migrate.fix.run import engine_scan
from migrate.scan.readers import scan_text

RULES = list(default_rules())

CODE = """\
    import torch
    import torch.distributed as torch_dist


    def collect_results_gpu(group, obj):
        group_backend = torch_dist.get_backend(group)
        is_nccl_backend = group_backend == torch_dist.Backend.NCCL
        if is_nccl_backend:
            return torch.device('cuda', torch.cuda.current_device())
        return torch.device('cpu')


    class PrefetchLoader:
        def __init__(self, device):
            self.is_cuda = torch.cuda.is_available() and device.type == 'cuda'


    def init(backend):
        if backend == 'nccl':
            torch_dist.init_process_group('nccl')
    """


@pytest.mark.parametrize("target", ["portable", "npu"])
def test_a_named_backend_or_vendor_test_stays_as_written(target):
    text, _, _, error = fix_text(
        textwrap.dedent(CODE), "t.py", "python", RULES, partial(engine_scan, target=target), unsafe=True
    )
    assert error is None
    assert "    is_nccl_backend = group_backend == torch_dist.Backend.NCCL\n" in text
    assert "        self.is_cuda = torch.cuda.is_available() and device.type == 'cuda'\n" in text
    # the code around them is still ported: the device of the NCCL branch (portable: in an
    # HCCL twin of the branch, the test repeated for HCCL), the backend choice
    twin = "    elif group_backend == 'hccl':\n        return torch.device('npu', torch.npu.current_device())"
    assert (twin in text) == (target == "portable")
    cuda = "torch.device('cuda', torch.cuda.current_device())"
    assert (cuda in text) == (target == "portable")
    assert "init_process_group('nccl')" not in text


def test_a_person_is_told_to_add_the_twin():
    found = scan_text(textwrap.dedent(CODE), "t.py", "python", RULES, "portable")
    kept = [x for x in found if x.line in (7, 15)]
    assert {x.line for x in kept} == {7, 15}
    for x in kept:
        assert x.category == "manual" and x.fix is None
    messages = " ".join(x.message for x in kept)
    assert "`is_nccl_backend` tests for NCCL by its name: an HCCL test goes beside it" in messages
    assert "`is_cuda` tests for CUDA by its name: an NPU test goes beside it" in messages


@pytest.mark.parametrize(
    "line",
    [
        "use_nccl = backend == 'nccl'",  # a choice, not a test named for the vendor
        "is_nccl_backend = 'nccl'",  # not a comparison
    ],
)
def test_other_names_and_values_are_ported(line):
    found = scan_text(f"import torch.distributed as dist\n\n{line}\n", "t.py", "python", RULES, "portable")
    assert found and all(x.fix is not None for x in found)


# timm's train.py / validate.py before their NPU port (#2109)
PROBES = """\
    import torch

    has_native_amp = False
    try:
        if getattr(torch.cuda.amp, 'autocast') is not None:
            has_native_amp = True
    except AttributeError:
        pass

    bf16 = hasattr(torch.cuda, "is_bf16_supported") and torch.cuda.is_bf16_supported()
    sync = getattr(torch.cuda, "synchronize", None)
    """


@pytest.mark.parametrize("target", ["portable", "npu"])
def test_a_probe_of_torchs_names_is_left_as_written(target):
    out = port(PROBES, target)
    assert "    if getattr(torch.cuda.amp, 'autocast') is not None:\n" in out
    assert 'hasattr(torch.cuda, "is_bf16_supported")' in out
    # what the probe guards is ported, and a getattr whose result is called later is a use
    assert "torch.cuda.is_bf16_supported()" not in out
    assert 'getattr(torch.cuda, "synchronize", None)' not in out
    found = engine_scan(textwrap.dedent(PROBES), "t.py", "python", RULES, target)
    probe = [f for f in found if f.line == 5]
    assert probe and all(f.npu_aware and f.fix is None for f in probe)
    assert port(out, target) == out


FALLBACKS = """\
    from functools import partial

    import torch


    def setup(device, amp_dtype):
        try:
            amp_autocast = partial(torch.autocast, device_type=device.type, dtype=amp_dtype)
        except (AttributeError, TypeError):
            # fallback to CUDA only AMP for PyTorch < 1.10
            assert device.type == 'cuda'
            amp_autocast = torch.cuda.amp.autocast
        try:
            scaler = torch.amp.GradScaler("cuda")
        except AttributeError:
            scaler = torch.cuda.amp.GradScaler()
        return amp_autocast, scaler
    """


@pytest.mark.parametrize("target", ["portable", "npu"])
def test_a_fallback_for_a_torch_older_than_torch_npus_is_left_as_written(target):
    """timm's train.py: the `except (AttributeError, TypeError):` arm of a `try` using
    torch.autocast (torch >= 1.10) never runs with torch_npu's torch (>= 2.1); the arm of
    one using torch.amp.GradScaler (2.3) may, and is ported with a spelling torch < 2.3 has."""
    out = port(FALLBACKS, target)
    assert "        assert device.type == 'cuda'\n        amp_autocast = torch.cuda.amp.autocast\n" in out
    assert "torch.cuda.amp.GradScaler()" not in out
    fallback = out.split("except AttributeError:\n")[1].splitlines()[0]
    assert "torch.amp.GradScaler" not in fallback and "npu" in fallback, fallback
    assert port(out, target) == out
