"""Every torch_npu.* / torch.npu.* name the fixers emit exists in the torch_npu 2.14.0 wheel."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from migrate.source.fixers import get_fixer

WHEEL = Path("/work/cache/torch_npu_src/torch_npu")


def _emitted() -> str:
    # Load through the registry: importing one fixer module directly would stop
    # get_fixer() from discovering the others.
    get_fixer("flash-attention")
    from migrate.source.fixers import apex_amp, flash_attention, fused_rms_norm, xformers_attention

    return "\n".join([flash_attention.FUNC_HELPER, flash_attention.VARLEN_HELPER,
                      xformers_attention.HELPER, fused_rms_norm.HELPER, apex_amp.NOTE,
                      "torch.npu.is_bf16_supported()"])


def _public_npu_names() -> set[str]:
    text = (WHEEL / "npu" / "__init__.py").read_text()
    return set(re.findall(r'"(\w+)"', text.split("__all__", 1)[1].split("]", 1)[0]))


@pytest.mark.skipif(not WHEEL.is_dir(), reason="unpacked torch_npu wheel not available")
def test_emitted_names_exist_in_wheel():
    emitted = _emitted()
    ops = (WHEEL / "_op_plugin_docs.py").read_text()
    npu_all = _public_npu_names()
    npu_amp = (WHEEL / "npu" / "amp" / "__init__.py").read_text()
    for name in set(re.findall(r"torch_npu\.(\w+)", emitted)):
        assert f'"{name}",' in ops, name
    for name in set(re.findall(r"torch\.npu\.(\w+)", emitted)):
        if name == "amp":
            continue
        assert name in npu_all, name
    for name in set(re.findall(r"torch\.npu\.amp\.(\w+)", emitted)):
        assert f'"{name}"' in npu_amp, name
