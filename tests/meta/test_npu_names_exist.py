"""Every NPU name the rules point users to exists in torch_npu 2.14.0.

Targets of ``qualified-name`` rules, and every ``torch.npu.*`` / ``torch_npu.*`` name written in
an example's fixed code, a note, a message or a doc, are looked up in the torch_npu wheel
(downloaded once into .cache/wheels, parsed statically by tools/npu_wheel.py). Other torch
targets must exist in the installed torch or be added to torch by torch_npu.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from npu_wheel import npu_wheel, target_exists

from migrate.core.rules import load_rules

REPO = Path(__file__).resolve().parents[2]  # the checkout (migrate may be installed elsewhere)

pytestmark = pytest.mark.slow  # downloads the 44 MB wheel on the first run

RULES = load_rules()
QUALIFIED = [r for r in RULES if r.kind == "qualified-name"]
_NPU_NAME = re.compile(r"\b(?:torch_npu|torch\.npu)(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def _texts(rule):
    """Where a rule mentions names: fixed examples, notes, message, docs."""
    yield "message", rule.message
    for section, text in rule.doc.items():
        yield f"doc.{section}", text
    for key, note in rule.params.get("notes", {}).items():
        yield f"note for {key}", note
    for i, example in enumerate(rule.examples):
        if "after" in example:
            yield f"example {i} after", example["after"]


def test_resolver_tells_present_from_missing():
    wheel = npu_wheel()
    present = [
        "torch.npu.synchronize",
        "torch.npu.amp.autocast",
        "torch.npu.NPUGraph",
        "torch.npu.mstx.range_push",
        "torch.npu.mstx.annotate",
        "torch.npu.matmul.allow_hf32",
        "torch.npu.conv.allow_hf32",
        "torch_npu.optim.NpuFusedAdamW",
        "torch_npu.npu_fusion_attention",
        "torch.npu.FloatTensor",
        "torch_npu.npu.memory._record_memory_history",
    ]
    missing = [
        "torch.npu.get_arch_list",
        "torch.npu.matmul.allow_tf32",
        "torch.npu.CUDAGraph",
        "torch_npu.npu_flash_attn_func",
        "torch_npu.optim.NpuFusedNovoGrad",
        "torch.npu.nvtx",
        "torch.npu.mstx.nope",
        "torch.npu.CubeMathType.FP32",
        "torch.cuda.synchronize",
    ]
    assert [n for n in present if not wheel.exists(n)] == []
    assert [n for n in missing if wheel.exists(n)] == []


def test_wheel_inventory_is_plausible():
    wheel = npu_wheel()
    # torch_npu 2.14.0: 119 public custom ops, ~140 names in torch_npu.npu.__all__.
    assert 100 <= len(wheel.exported_ops()) <= 200
    assert {"npu_fusion_attention", "npu_rms_norm", "npu_rotary_mul"} <= wheel.exported_ops()
    assert len(wheel.members("torch.npu")) >= 140
    assert "torch.distributed.Backend.HCCL" in wheel.torch_additions()
    assert "torch.distributed.is_hccl_available" in wheel.torch_additions()


@pytest.mark.parametrize("rule", QUALIFIED, ids=[r.code for r in QUALIFIED])
def test_every_target_exists(rule):
    missing = sorted({t for t in rule.params["names"].values() if t is not None and not target_exists(t)})
    assert missing == [], f"{rule.code} points to names torch_npu 2.14.0 lacks"


@pytest.mark.parametrize("rule", QUALIFIED, ids=[r.code for r in QUALIFIED])
def test_targets_in_npu_submodules_use_the_canonical_path(rule):
    """``from torch.npu.amp import X`` would load a second copy of torch_npu/npu/amp."""
    wheel = npu_wheel()
    aliased = []
    for target in rule.params["names"].values():
        parts = (target or "").split(".")
        if parts[:2] == ["torch", "npu"] and len(parts) > 2:
            head = wheel.resolve(".".join(parts[:3]))
            if head is not None and head[0] == "mod":
                aliased.append(target)
    assert aliased == []


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_every_npu_name_mentioned_exists(rule):
    wheel = npu_wheel()
    missing = []
    for where, text in _texts(rule):
        for name in _NPU_NAME.findall(text):
            if not wheel.exists(name):
                missing.append(f"{where}: {name}")
    assert missing == []


def test_torch_cuda_rules_are_current():
    """rules/torch_cuda.yaml is what tools/build_cuda_rules.py writes from the snapshots of
    every supported torch, and this torch lists exactly its snapshot's names: under a torch
    without one (or whose names moved) the check fails, naming the command, never skips."""
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "tools" / "build_cuda_rules.py"),
            "--check",
            "--data",
            str(REPO / ".no-data"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_build_script_refuses_a_missing_target(tmp_path):
    notes = (REPO / "tools" / "cuda_rules_notes.yaml").read_text(encoding="utf-8")
    broken = notes.replace(
        "torch.cuda.CUDAGraph: torch.npu.NPUGraph", "torch.cuda.CUDAGraph: torch.npu.CUDAGraph"
    )
    assert broken != notes
    (tmp_path / "notes.yaml").write_text(broken, encoding="utf-8")
    out = tmp_path / "torch_cuda.yaml"
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "tools" / "build_cuda_rules.py"),
            "--notes",
            str(tmp_path / "notes.yaml"),
            "--out",
            str(out),
            "--data",
            str(tmp_path / "no-data"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode == 1
    assert "torch.npu.CUDAGraph" in result.stderr
    assert not out.exists()


def test_rule_check_fails_for_a_torch_without_a_snapshot(tmp_path, monkeypatch, capsys):
    """A torch the table was not built from fails the check (and says how to fix it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_cuda_rules", REPO / "tools" / "build_cuda_rules.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    monkeypatch.setattr(tool, "SNAPSHOTS", tmp_path)
    assert tool.main(["--check", "--data", str(tmp_path / "none")]) == 1
    assert "has no snapshot" in capsys.readouterr().err
