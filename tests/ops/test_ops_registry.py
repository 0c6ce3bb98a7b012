"""The committed op registry answers coverage questions (no torch_npu wheel needed)."""

from __future__ import annotations

import zipfile

import pytest
import yaml

from migrate.core.errors import UsageError
from migrate.ops import registry
from migrate.ops.registry import query


@pytest.mark.parametrize(
    "op",
    [
        "aten::matmul",
        "aten::scaled_dot_product_attention",
        "aten::lstm.input",
        "aten::add.Tensor",
        "aten::gelu.out",
        "aten::native_layer_norm",
        "aten::addmm",
    ],
)
def test_aten_ops_with_npu_kernels(op):
    assert query("aten", op).status == "supported"


@pytest.mark.parametrize("op", ["aten::lgamma", "aten::special_i1", "aten::_linalg_eigh", "aten::gelu"])
def test_aten_ops_without_npu_kernels(op):
    # aten::gelu itself is not listed (only gelu.out): the capture resolves it structurally.
    verdict = query("aten", op)
    assert verdict.status == "cpu-fallback"
    assert "TORCH_NPU_FALLBACK_CPU_DISABLE" in verdict.reason


def test_aten_registry_counts_match_the_wheel_facts():
    reg = registry.load_aten()
    assert reg.version == "torch_npu-2.14.0"
    assert len(reg.custom) == 419
    assert sum(1 for v in reg.custom.values() if v["exposed"]) == 127
    assert len(reg.overloads) > 1000


def test_atc_keys_by_model_opset_exactly():
    assert query("atc", "Abs", opset=18).status == "supported"
    verdict = query("atc", "Abs", opset=20)
    assert verdict.status == "unsupported" and "opset_version=18" in verdict.reason
    assert query("atc", "LayerNormalization", opset=16).status == "unsupported"
    assert query("atc", "LayerNormalization", opset=17).status == "supported"
    assert query("atc", "ReduceL1", opset=18).status == "unsupported"  # stops at 17
    assert query("atc", "ReduceL2", opset=18).status == "supported"  # documented (corrections)
    assert query("atc", "Gelu", opset=18).status == "unsupported"
    assert query("atc", "Constant", opset=18).status == "supported"


def test_atc_dtype_limits_from_ascend_op_definitions():
    assert query("atc", "Erf", opset=18, dtype="FLOAT").status == "supported"
    assert query("atc", "Erf", opset=18, dtype="DOUBLE").status == "restricted"


def test_ort_cann_graph_mode_and_cpu_fallback():
    assert query("ort-cann", "Abs", opset=13).status == "supported"
    assert query("ort-cann", "Gelu", opset=20).status == "cpu-fallback"
    verdict = query("ort-cann", "Abs", opset=18)  # outside graph mode: single-op kernel
    assert verdict.status == "supported" and "single-op" in verdict.reason


def test_unknown_target_is_a_usage_error():
    with pytest.raises(UsageError):
        query("aten", "aten::mm", target="torch_npu==0.0.1")
    assert query("aten", "aten::mm", target="torch_npu==2.14.0").status == "supported"


def _fake_wheel(path, version, ops):
    native = {
        "backend": "NPU",
        "supported": ops,
        "custom": [{"func": "npu_thing(Tensor self) -> Tensor", "exposed": True}],
    }
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("torch_npu/version.py", f"__version__ = '{version}'\ngit_version = 'abc'\n")
        zf.writestr("torch_npu/csrc/aten/npu_native_functions.yaml", yaml.safe_dump(native))
        zf.writestr("torch_npu/npu/__init__.py", "__all__ = ['is_available', 'synchronize']\n")
        zf.writestr("torch_npu/__init__.py", "__all__ = ['npu_thing']\n")


def test_builder_adds_a_version_and_target_selects_it(tmp_path, monkeypatch, op_builder):
    tool, out = op_builder
    for version, ops in (("2.9.0", ["mm", "lgamma"]), ("2.10.0", ["mm"])):
        wheel = tmp_path / f"torch_npu-{version}-cp311-none-any.whl"
        _fake_wheel(wheel, version, ops)
        assert tool.main(["--wheel", str(wheel)]) == 0
    monkeypatch.setattr(registry, "op_registry_dir", lambda: out)
    registry.load_aten.cache_clear()
    try:
        assert registry.versions("aten") == ["torch_npu-2.9.0", "torch_npu-2.10.0"]
        assert registry.load_aten().version == "torch_npu-2.10.0"  # newest by default
        assert query("aten", "aten::lgamma").status == "cpu-fallback"
        assert query("aten", "aten::lgamma", target="torch_npu==2.9.0").status == "supported"
        assert registry.load_aten("torch_npu==2.9.0").custom["npu_thing"]["exposed"] is True
    finally:
        registry.load_aten.cache_clear()
