"""Every torch_npu.* / torch.npu.* name `apply` emits exists in the torch_npu 2.14.0 wheel:
the names in the fixers' generated helpers and notes, and in the migrated samples."""

from __future__ import annotations

import re

import pytest
from npu_wheel import npu_wheel

from .goldens import EXPECTED

pytestmark = pytest.mark.slow  # the shared resolver fetches the wheel on its first run
_NPU_NAME = re.compile(r"\b(?:torch_npu|torch\.npu)(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def _fixer_texts() -> str:
    from migrate.scan.python.fixers import apex_amp, flash_attention, fused_rms_norm, xformers_attention

    return "\n".join(
        [
            flash_attention.FUNC_HELPER,
            flash_attention.VARLEN_HELPER,
            xformers_attention.HELPER,
            fused_rms_norm.HELPER,
            apex_amp.NOTE,
            "torch.npu.is_bf16_supported()",
        ]
    )


def _golden_texts() -> str:
    return "\n".join(p.read_text() for p in EXPECTED.rglob("*.py"))


@pytest.mark.parametrize("source", ["fixers", "goldens"])
def test_emitted_names_exist_in_wheel(source):
    text = _fixer_texts() if source == "fixers" else _golden_texts()
    names = sorted(set(_NPU_NAME.findall(text)))
    assert names, "nothing to check"
    wheel = npu_wheel()
    missing = [n for n in names if not wheel.exists(n)]
    assert not missing, missing
