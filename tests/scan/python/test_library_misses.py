"""CUDA-only libraries the scan missed (issue 35): a bare `import msamp`, megatron.core
imports (MindSpeed is the answer), a BitsAndBytesConfig call after its flagged import. Run
through `migrate scan` on files in a folder, in every target."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from fix.goldens import migrate_cli

TARGETS = ("portable", "npu", "transfer")


def scan(root: Path, files: dict[str, str], target: str) -> list[tuple[str, str, int, str]]:
    for rel, text in files.items():
        (root / rel).write_text(textwrap.dedent(text))
    out = root / "report.json"
    args = ["scan", str(root), "--no-cache", "--exit-zero", "--format", "json", "-o", str(out)]
    result = migrate_cli([*args, "--target", target])
    assert result.exit_code == 0, result.output
    found = json.loads(out.read_text())["findings"]
    return sorted((f["rule"], Path(f["path"]).name, f["line"], f["message"]) for f in found)


@pytest.mark.parametrize("target", TARGETS)
def test_a_bare_import_of_a_library_without_an_npu_build(tmp_path, target):
    found = scan(
        tmp_path,
        {
            "fp8.py": "import msamp\nimport torch\n\nmodel = torch.nn.Linear(2, 2)\n",
            "named.py": "from msamp import initialize\n",
            "libs.py": "import bitsandbytes\nimport flash_attn.bert_padding\n",
            "plain.py": "import torch.cuda.amp\nimport torch.backends.cudnn\nx = 1\n",
        },
        target,
    )
    rows = [(rule, name, line) for rule, name, line, _ in found]
    assert ("MIG522", "fp8.py", 1) in rows
    assert ("MIG522", "named.py", 1) in rows
    assert ("MIG511", "libs.py", 1) in rows and ("MIG508", "libs.py", 2) in rows
    msg = next(m for rule, name, _, m in found if name == "fp8.py")
    assert "NVIDIA" in msg and "bfloat16" in msg  # what it is, and what to do instead
    if target == "portable":  # torch's own modules import on an NPU host: uses carry it
        assert [r for r in rows if r[1] == "plain.py"] == []


@pytest.mark.parametrize("target", TARGETS)
def test_megatron_core_imports_point_to_mindspeed(tmp_path, target):
    code = """\
    import megatron.core
    from megatron.core import parallel_state
    from megatron.core.transformer import TransformerConfig

    rank = megatron.core.parallel_state.get_tensor_model_parallel_rank()
    cfg = TransformerConfig(num_layers=2)
    """
    adapted = "import mindspeed.megatron_adaptor\n" + textwrap.dedent(code)
    found = scan(tmp_path, {"train.py": code, "adapted.py": adapted}, target)
    rows = [(rule, name, line) for rule, name, line, _ in found if rule == "MIG524"]
    assert rows == [("MIG524", "train.py", 1), ("MIG524", "train.py", 2), ("MIG524", "train.py", 3)]
    assert all("mindspeed.megatron_adaptor" in m for rule, _, _, m in found if rule == "MIG524")


def test_megatron_fused_kernels_still_flag_their_uses(tmp_path):
    code = "from megatron.core.fusions.fused_bias_gelu import bias_gelu_impl\ny = bias_gelu_impl(x, b)\n"
    found = scan(tmp_path, {"m.py": code}, "npu")
    assert [(r, line) for r, _, line, _ in found] == [("MIG523", 1)]


@pytest.mark.parametrize("target", TARGETS)
def test_bits_and_bytes_config_call_after_its_import(tmp_path, target):
    code = """\
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig
    from transformers import BitsAndBytesConfig as Q

    cfg = BitsAndBytesConfig(load_in_4bit=True)
    model = AutoModelForCausalLM.from_pretrained("m", quantization_config=Q(load_in_8bit=True))
    kind = BitsAndBytesConfig
    """
    found = scan(tmp_path, {"load.py": code}, target)
    assert [(r, line) for r, _, line, _ in found if r == "MIG519"] == [
        ("MIG519", 1),
        ("MIG519", 2),
        ("MIG519", 4),
        ("MIG519", 5),
    ]
    assert all("partial" in m for r, _, _, m in found if r == "MIG519")
