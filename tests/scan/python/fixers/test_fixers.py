"""Assisted fixers: before/after and declined (no-op) cases."""

from __future__ import annotations

from textwrap import dedent

import pytest
from fixer_util import findings_for, run_fixer

FA = {
    "flash_attn.flash_attn_func",
    "flash_attn.flash_attn_varlen_func",
    "flash_attn.flash_attn_interface.flash_attn_func",
}


def test_flash_attn_func_calls_generated_helper_once():
    src = dedent('''\
        """Attention."""
        import torch
        from flash_attn import flash_attn_func


        class Attn(torch.nn.Module):
            def forward(self, q, k, v):
                a = flash_attn_func(q, k, v, dropout_p=0.1, causal=True)
                return a + flash_attn_func(q, k, v, softmax_scale=0.5)
        ''')
    out = run_fixer("flash-attention", FA, src)
    assert out.count("def npu_flash_attn_func(") == 1
    assert out.count("import torch_npu") == 1
    assert "a = npu_flash_attn_func(q, k, v, dropout_p=0.1, causal=True)" in out
    assert "return a + npu_flash_attn_func(q, k, v, softmax_scale=0.5)" in out
    # the flash_attn import goes; the helper sits before the class, two blank lines around
    assert "from flash_attn" not in out
    assert "import torch_npu\n\n\ndef npu_flash_attn_func(" in out
    assert "    )[0]\n\n\nclass Attn" in out
    assert "keep_prob=1.0 - dropout_p" in out and "sparse_mode = 3" in out


def test_flash_attn_varlen_uses_tnd_and_cu_seqlens_lists():
    src = dedent("""\
        import torch
        import flash_attn as fa

        def attend(q, k, v, cu, m):
            return fa.flash_attn_varlen_func(q, k, v, cu, cu, m, m, 0.0, None, True)
        """)
    out = run_fixer("flash-attention", FA, src)
    assert "return npu_flash_attn_varlen_func(q, k, v, cu, cu, m, m, 0.0, None, True)" in out
    assert '"TND"' in out and "actual_seq_qlen=cu_seqlens_q[1:].tolist()" in out


@pytest.mark.parametrize(
    "call",
    [
        "flash_attn_func(q, k, v, window_size=(128, 0))",
        "flash_attn_func(q, k, v, alibi_slopes=s)",
        "flash_attn_func(q, k, v, return_attn_probs=True)",
        "flash_attn_func(*qkv)",
        "flash_attn_func(q, k, v, **kw)",
    ],
)
def test_flash_attn_declines_unmappable_calls(call):
    src = f"from flash_attn import flash_attn_func\nout = {call}\n"
    assert [f.fix for f in findings_for("flash-attention", FA, src)] == [None]


def test_flash_attn_helper_is_not_duplicated_on_rerun():
    src = (
        "import torch\nfrom flash_attn import flash_attn_func\n\ndef f(q, k, v):\n"
        "    return flash_attn_func(q, k, v)\n"
    )
    once = run_fixer("flash-attention", FA, src)
    assert run_fixer("flash-attention", FA, once) == once


XF = {"xformers.ops.memory_efficient_attention"}


def test_xformers_lower_triangular_becomes_causal():
    src = dedent("""\
        import xformers.ops as xops

        def f(q, k, v):
            return xops.memory_efficient_attention(q, k, v, attn_bias=xops.LowerTriangularMask())
        """)
    out = run_fixer("xformers-attention", XF, src)
    assert "return npu_memory_efficient_attention(q, k, v, causal=True)" in out
    assert "sparse_mode = 2" in out and "import torch\nimport torch_npu\n" in out


def test_xformers_positional_mask_and_tensor_bias():
    src = dedent("""\
        import torch
        from xformers.ops import LowerTriangularMask, memory_efficient_attention

        def f(q, k, v, bias):
            a = memory_efficient_attention(q, k, v, LowerTriangularMask())
            return a + memory_efficient_attention(q, k, v, bias, 0.1)
        """)
    out = run_fixer("xformers-attention", XF, src)
    assert "a = npu_memory_efficient_attention(q, k, v, None, causal=True)" in out
    assert "npu_memory_efficient_attention(q, k, v, bias, 0.1)" in out


def test_xformers_declines_block_diagonal_and_op():
    src = dedent("""\
        import xformers.ops as xops
        a = xops.memory_efficient_attention(q, k, v, attn_bias=xops.fmha.BlockDiagonalMask.x())
        b = xops.memory_efficient_attention(q, k, v, op=xops.MemoryEfficientAttentionCutlassOp)
        """)
    assert [f.fix for f in findings_for("xformers-attention", XF, src)] == [None, None]


AMP = {"apex.amp.initialize"}


def test_amp_initialize_statement_becomes_a_note():
    src = dedent("""\
        from apex import amp

        def setup(model, optimizer):
            model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
            return model, optimizer
        """)
    out = run_fixer("apex-amp-initialize", AMP, src)
    assert "amp.initialize" not in out.split("removed")[1]
    assert '    # migrate: apex.amp.initialize(opt_level="O1") removed.\n' in out
    assert "    return model, optimizer\n" in out


def test_amp_initialize_in_other_positions_returns_its_arguments():
    src = dedent("""\
        from apex import amp
        net, opt = amp.initialize(model, optimizer, opt_level="O2")
        model = amp.initialize(model)
        """)
    out = run_fixer("apex-amp-initialize", AMP, src)
    assert "net, opt = (model, optimizer)\n" in out and "model = model\n" not in out


RMS = {"apex.normalization.FusedRMSNorm"}


def test_fused_rms_norm_module():
    src = dedent("""\
        import torch
        from apex.normalization import FusedRMSNorm


        class Block(torch.nn.Module):
            def __init__(self, d):
                super().__init__()
                self.norm = FusedRMSNorm(d, eps=1e-6)
        """)
    out = run_fixer("fused-rms-norm", RMS, src)
    assert "self.norm = NpuRMSNorm(d, eps=1e-6)" in out
    assert "torch_npu.npu_rms_norm(x, weight, epsilon=self.eps)[0]" in out
    assert out.index("class NpuRMSNorm") < out.index("class Block")


CAP = {"torch.cuda.get_device_capability"}


@pytest.mark.parametrize(
    "before,after",
    [
        ("if torch.cuda.get_device_capability() >= (8, 0):", "if torch.npu.is_bf16_supported():"),
        ("if torch.cuda.get_device_capability()[0] >= 8:", "if torch.npu.is_bf16_supported():"),
        ("if torch.cuda.get_device_capability()[0] > 7:", "if torch.npu.is_bf16_supported():"),
        ("if torch.cuda.get_device_capability() < (8, 0):", "if not torch.npu.is_bf16_supported():"),
        ("if (8, 0) <= torch.cuda.get_device_capability():", "if torch.npu.is_bf16_supported():"),
        ("if torch.cuda.get_device_capability()[0] >= 9:", "if False:"),
        ("if torch.cuda.get_device_capability() >= (7, 5):", "if torch.npu.is_bf16_supported():"),
        (
            "if x + (torch.cuda.get_device_capability() < (8, 0)):",
            "if x + ((not torch.npu.is_bf16_supported())):",
        ),
    ],
)
def test_device_capability_compare(before, after):
    src = f"import torch\n{before}\n    pass\n"
    out = run_fixer("device-capability-compare", CAP, src)
    assert out == f"import torch\n{after}\n    pass\n"


@pytest.mark.parametrize(
    "line",
    [
        "major, minor = torch.cuda.get_device_capability()",
        "ok = torch.cuda.get_device_capability() == (8, 0)",
        "ok = torch.cuda.get_device_capability() >= min_cap",
    ],
)
def test_device_capability_declines(line):
    src = f"import torch\n{line}\n"
    assert [f.fix for f in findings_for("device-capability-compare", CAP, src)] == [None]


def test_rms_norm_import_goes_only_when_every_use_is_rewritten():
    src = dedent("""\
        import torch
        from apex.normalization import FusedRMSNorm


        def build(d):
            return torch.nn.Sequential(FusedRMSNorm(d), FusedRMSNorm(d, eps=1e-6))
        """)
    out = run_fixer("fused-rms-norm", RMS, src)
    assert "from apex" not in out and out.count("NpuRMSNorm(d") == 2
    assert "import torch_npu\n\n\nclass NpuRMSNorm" in out and "eps)[0]\n\n\ndef build" in out
    kept = src + "\n\ndef is_norm(m):\n    return isinstance(m, FusedRMSNorm)\n"
    out = run_fixer("fused-rms-norm", RMS, kept)
    assert "from apex.normalization import FusedRMSNorm" in out
    assert "isinstance(m, FusedRMSNorm)" in out and out.count("NpuRMSNorm(d") == 2


def test_flash_attn_import_in_try_block_goes_with_its_blank_line():
    src = dedent("""\
        import torch

        try:
            from flash_attn import flash_attn_func

            HAS_FLASH = True
        except ImportError:
            HAS_FLASH = False


        def f(q, k, v):
            return flash_attn_func(q, k, v) if HAS_FLASH else None
        """)
    out = run_fixer("flash-attention", FA, src)
    assert "try:\n    HAS_FLASH = True\nexcept ImportError:" in out
