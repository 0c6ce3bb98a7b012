"""ONNX census on real graphs: torch exports, ONNX's node test models, external data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ops_testlib import node_case

from migrate.core.errors import UsageError
from migrate.ops.onnx_census import census

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _by_op(report):
    out = {}
    for row in report["ops"]:
        out.setdefault(row["op"], []).append(row)
    return out


def test_default_export_is_opset_20_and_fails_on_every_node(exported):
    report = census(exported["default"])
    assert report["opset"] == 20
    assert all(r["status"] == "unsupported" for r in report["ops"])
    ops = _by_op(report)
    assert ops["Gelu"][0]["decomposition"] == "gelu-erf|gelu-tanh"
    assert "opset_version=18" in ops["Gemm"][0]["reason"]
    assert any("opset_version=18" in a for a in report["advice"])


def test_opset18_export_is_fully_supported(exported):
    report = census(exported["opset18"])
    assert report["opset"] == 18
    assert report["summary"]["unsupported"] == 0
    assert {r["status"] for r in report["ops"]} == {"supported"}
    assert "Erf" in _by_op(report)  # the exporter already lowered GELU
    assert report["summary"]["nodes"]["supported"] == report["nodes"]


def test_ort_cann_backend_judges_graph_mode_opsets(exported):
    report = census(exported["opset18"], backend="ort-cann")
    ops = _by_op(report)
    # opset 18 is outside graph mode (8-15): single-op kernels or CPU fallback.
    assert ops["LayerNormalization"][0]["status"] == "cpu-fallback"
    assert ops["Erf"][0]["status"] == "supported"
    assert ops["Gemm"][0]["status"] == "supported"


@pytest.mark.parametrize(
    "name, inner", [("test_if", {"Constant"}), ("test_loop11", {"Add"}), ("test_scan9_sum", {"Add"})]
)
def test_subgraphs_are_walked(tmp_path, name, inner):
    model, _, _ = node_case(name)
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    report = census(path)
    paths = [n for r in report["ops"] for n in r["nodes"]]
    assert any("/" in p for p in paths), paths
    assert inner <= {r["op"] for r in report["ops"]}
    if name != "test_if":
        top = _by_op(report)["Loop" if "loop" in name else "Scan"][0]
        assert top["status"] == "unsupported"


@pytest.mark.parametrize(
    "name, status",
    [
        ("test_einsum_batch_matmul", "restricted"),
        ("test_resize_upsample_scales_cubic", "restricted"),
        ("test_resize_upsample_scales_linear", "supported"),
        ("test_gridsample_bicubic", "restricted"),
        ("test_gridsample_nearest", "supported"),
    ],
)
def test_documented_attribute_limits(tmp_path, name, status):
    model, inputs, _ = node_case(name)
    if name.startswith("test_resize"):  # ATC needs scales as constants: make them initializers
        from onnx import numpy_helper

        for vi, value in list(zip(model.graph.input, inputs, strict=False))[1:]:
            model.graph.initializer.append(numpy_helper.from_array(value, vi.name))
            model.graph.input.remove(vi)
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx") and imp.version > 18:
            imp.version = 18  # judge the attribute, not the opset
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    op = name.split("_")[1].capitalize().replace("Gridsample", "GridSample")
    rows = _by_op(census(path))[op]
    assert rows[0]["status"] == status, rows[0]["reason"]


def test_resize_with_computed_scales_is_restricted(tmp_path):
    model, _, _ = node_case("test_resize_upsample_scales_linear")
    for imp in model.opset_import:
        imp.version = min(imp.version, 18)
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    (row,) = _by_op(census(path))["Resize"]
    assert row["status"] == "restricted" and "constants" in row["reason"]


def test_custom_domain_is_flagged(tmp_path):
    node = helper.make_node("FusedGelu", ["x"], ["y"], domain="com.microsoft")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", 1, [2])],
        [helper.make_tensor_value_info("y", 1, [2])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    path = tmp_path / "c.onnx"
    onnx.save(model, str(path))
    report = census(path)
    assert report["custom_domains"] == ["com.microsoft"]
    assert report["ops"][0]["status"] == "unsupported"


def _external_model(folder: Path) -> Path:
    weight = numpy_helper.from_array(np.ones((64, 64), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    path = folder / "ext.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="ext.data", size_threshold=0)
    return path


def test_external_data_is_not_loaded_but_checked(tmp_path):
    path = _external_model(tmp_path)
    assert census(path)["summary"]["supported"] == 1
    (tmp_path / "ext.data").write_bytes(b"\0" * 10)
    with pytest.raises(UsageError, match="truncated"):
        census(path)
    (tmp_path / "ext.data").unlink()
    with pytest.raises(UsageError, match="missing"):
        census(path)


def test_bad_files_are_usage_errors(tmp_path, exported):
    data = exported["opset18"].read_bytes()
    (tmp_path / "trunc.onnx").write_bytes(data[: len(data) // 2])
    (tmp_path / "tensor.onnx").write_bytes(
        numpy_helper.from_array(np.arange(6, dtype=np.float32)).SerializeToString()
    )
    (tmp_path / "junk.onnx").write_bytes(b"\xff\xfe not protobuf at all")
    for name in ("trunc.onnx", "tensor.onnx", "junk.onnx", "absent.onnx"):
        with pytest.raises(UsageError):
            census(tmp_path / name)


@pytest.mark.parametrize("name", ["light_resnet50", "light_inception_v2"])
def test_onnx_shipped_real_models(name):
    path = Path(onnx.__file__).parent / "backend/test/data/light" / f"{name}.onnx"
    if not path.is_file():
        pytest.skip("this onnx install ships no light models")
    atc = census(path)
    assert atc["opset"] == 9 and atc["nodes"] > 50
    assert {"Conv", "Relu"} <= {r["op"] for r in atc["ops"]}
    assert atc["summary"]["unsupported"] == atc["summary"]["restricted"] == 0
    ort_cann = census(path, backend="ort-cann")
    assert all(r["reason"] == "CANN EP graph mode" for r in ort_cann["ops"])


def test_legacy_and_dynamo_exports_get_the_same_verdicts(tmp_path):
    """The legacy exporter records no value_info; shape inference gives its nodes dtypes, so
    INT64 shape arithmetic (Div) is flagged and shared ops get the dynamo export's verdicts."""
    torch = pytest.importorskip("torch")
    import warnings

    class Heads(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x):
            b, t, c = x.shape
            h = self.fc(x).view(b, t, 2, c // 2).transpose(1, 2)
            return (h @ h.transpose(-1, -2)).softmax(-1)

    x = torch.randn(2, 5, 8)
    verdicts = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dynamo in (False, True):
            path = tmp_path / f"heads_{dynamo}.onnx"
            kw = (
                {"dynamic_shapes": ({0: torch.export.Dim("b"), 1: torch.export.Dim("t")},)}
                if dynamo
                else {"dynamic_axes": {"x": {0: "b", 1: "t"}}}
            )
            torch.onnx.export(
                Heads().eval(),
                (x,),
                str(path),
                opset_version=18,
                dynamo=dynamo,
                input_names=["x"],
                verbose=False,
                **kw,
            )
            verdicts[dynamo] = {(r["op"], tuple(r["dtypes"])): r["status"] for r in census(path)["ops"]}
    legacy, dynamo = verdicts[False], verdicts[True]
    assert legacy[("Div", ("INT64",))] == "restricted"
    assert all(op[1] for op in legacy if op[0] != "Constant")  # every node has a dtype
    shared = set(legacy) & set(dynamo)
    assert {"MatMul", "Softmax", "Reshape"} <= {op for op, _ in shared}
    assert {k: legacy[k] for k in shared} == {k: dynamo[k] for k in shared}
