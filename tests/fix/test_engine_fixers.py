"""Fixers driven by the real scan engine (rule rows -> fixer -> applier -> fixpoint)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from migrate.core.rules import default_rules, load_rules
from migrate.fix.rewrite import fix_text
from migrate.fix.run import engine_scan as _engine_scan
from migrate.fix.verify import verify_python

from .goldens import SAMPLES

FIXTURES = Path(__file__).parent / "fixtures"
engine_scan = partial(_engine_scan, target="npu")  # the NPU-only fixers


@pytest.fixture(scope="module")
def rules():
    extra = load_rules(FIXTURES)
    shipped = [r for r in default_rules()]
    return shipped + extra


def test_hf_sample_gets_fusion_attention_and_rms_norm(rules):
    src = (SAMPLES / "hf_flash_attention" / "modeling_llama_lite.py").read_text()
    out, edits, _, err = fix_text(src, "m.py", "python", rules, engine_scan, unsafe=True)
    assert err is None and verify_python(out, "m.py") is None
    assert out.count("def npu_flash_attn_func(") == 1
    assert out.count("def npu_flash_attn_varlen_func(") == 1
    assert out.count("class NpuRMSNorm(") == 1
    assert "out = npu_flash_attn_func(q, k, v, dropout_p=dropout, softmax_scale=scale, causal=True)" in out
    assert "self.input_layernorm = NpuRMSNorm(config.hidden_size" in out
    assert "return torch.npu.is_bf16_supported()" in out
    assert out.count("import torch_npu\n") == 1
    again, more, _, _ = fix_text(out, "m.py", "python", rules, engine_scan, unsafe=True)
    assert (again, more) == (out, [])


def test_without_unsafe_flag_assisted_fixes_stay_out(rules):
    src = (
        "import torch\nfrom flash_attn import flash_attn_func\n\n\ndef f(q, k, v):\n"
        "    return flash_attn_func(q, k, v, causal=True)\n"
    )
    out, edits, remaining, err = fix_text(src, "m.py", "python", rules, engine_scan, unsafe=False)
    assert out == src and edits == []
    assert any(f.fix and f.fix.applicability == "unsafe" for f in remaining)
