"""ATen capture of real PyTorch models against the committed torch_npu 2.14.0 registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.core.errors import UsageError

torch = pytest.importorskip("torch")
from migrate.ops.aten.census import aten_census  # noqa: E402

SPECS = Path(__file__).with_name("specs.py")


def spec(fn: str) -> str:
    return f"{SPECS}:{fn}"


@pytest.fixture(scope="module")
def supported_report():
    return aten_census(spec("supported"))


def _rows(report):
    return {r["op"]: r for r in report["ops"]}


def test_supported_model_reports_zero_non_supported(supported_report):
    s = supported_report["summary"]
    assert s["cpu-fallback"] == s["unsupported"] == s["restricted"] == 0, [
        (r["op"], r["reason"]) for r in supported_report["ops"] if r["status"] != "supported"
    ]


def test_composites_with_npu_kernels_are_reported_before_decomposition(supported_report):
    rows = _rows(supported_report)
    for op in ("aten::matmul", "aten::scaled_dot_product_attention", "aten::lstm.input", "aten::cdist"):
        assert rows[op]["status"] == "supported", op
    # The CPU flash kernel SDPA picks on CPU is not reported on its own.
    assert not any("_for_cpu" in op for op in rows)


def test_views_and_structured_ops_resolve(supported_report):
    rows = _rows(supported_report)
    assert rows["aten::t"]["status"] == "supported"
    assert "composite" in rows["aten::t"]["reason"]
    assert rows["aten::transpose.int"]["status"] == "supported"
    assert "gelu.out" in rows["aten::gelu"]["reason"]


def test_module_paths_name_the_dispatching_module(supported_report):
    rows = _rows(supported_report)
    assert rows["aten::native_layer_norm"]["nodes"] == ["norm"]
    assert "qkv" in rows["aten::addmm"]["nodes"]
    assert rows["aten::lstm.input"]["nodes"] == ["lstm"]


def test_ops_without_npu_kernels_are_cpu_fallback():
    report = aten_census(spec("special"))
    rows = _rows(report)
    for op in ("aten::special_i1", "aten::lgamma", "aten::_linalg_eigh"):
        assert rows[op]["status"] == "cpu-fallback", op
        assert rows[op]["nodes"] == ["<root>"]
    assert rows["aten::addmm"]["status"] == "supported"
    assert report["summary"]["cpu-fallback"] == 3


def test_dtype_option_casts_the_model():
    report = aten_census(spec("supported"), dtype="float64")
    row = _rows(report)["aten::addmm"]
    assert "float64" in row["dtypes"]
    assert any("float64" in n for n in row["notes"])


@pytest.mark.parametrize(
    "bad",
    [
        "no_such_module_xyz:make",
        f"{SPECS}:raises",
        f"{SPECS}:missing",
        f"{SPECS}:not_a_tuple",
        f"{SPECS}:model_fails",
        "nocolon",
    ],
)
def test_bad_specs_are_usage_errors(bad):
    with pytest.raises(UsageError):
        aten_census(bad)
