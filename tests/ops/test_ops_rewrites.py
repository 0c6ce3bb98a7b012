"""Every suggested rewrite of a CPU-fallback op (op_registry/aten/rewrites.yaml) computes the
same as the original on the CPU, uses only ops with NPU kernels, and replaces a real fallback.
A rewrite into torch_npu's custom ops runs their reference implementations
(migrate/emulate/fused), whose signatures are the wheel's op schemas (custom.yaml)."""

from __future__ import annotations

import inspect
import re
import types

import pytest

from migrate.ops.registry import load_aten
from migrate.ops.rewrites import RewriteError, checked, offered

torch = pytest.importorskip("torch")

REWRITES = load_aten().rewrites


def _boxes(n: int, low: float, high: float, gen):
    corner = low + torch.rand(n, 2, generator=gen, dtype=torch.float64) * (high - low)
    return torch.cat(
        [corner, corner + 1 + torch.rand(n, 2, generator=gen, dtype=torch.float64) * (high - low) / 2], 1
    )


def _input(kind: str, shape: list[int], gen, bounds=None):
    if kind == "int":
        return torch.randint(bounds[0], bounds[1], shape, generator=gen)
    if kind == "boxes":
        return _boxes(shape[0], bounds[0], bounds[1], gen)
    if kind == "rois":
        batch = torch.randint(0, bounds[0], (shape[0], 1), generator=gen).double()
        return torch.cat([batch, _boxes(shape[0], 0, bounds[1], gen)], 1)
    x = torch.randn(*shape, generator=gen, dtype=torch.float64)
    if kind == "log_softmax":
        return x.log_softmax(-1)
    if kind == "wellcond":
        return x + shape[-1] * torch.eye(shape[-1], dtype=torch.float64)
    if kind == "spd":
        return x @ x.mT + shape[-1] * torch.eye(shape[-1], dtype=torch.float64)
    if kind == "positive":
        return x.abs() + 0.5
    assert kind == "randn", kind
    return x


@pytest.mark.parametrize("op", sorted(REWRITES))
def test_rewrite_matches_the_original_numerically(op):
    entry = REWRITES[op]
    modules = {name: pytest.importorskip(name) for name in entry.get("requires", ())}
    gen = torch.Generator().manual_seed(0)
    env = {
        name: _input(*spec, gen) if len(spec) == 2 else _input(*spec[:2], gen, spec[2])
        for name, spec in entry["inputs"].items()
    }
    # one namespace: the lambdas in `to` see the inputs; torch_npu's ops are the references
    scope = {"torch": torch, "torch_npu": _references(), **modules, **env}
    want = eval(entry["from"], scope)  # noqa: S307 - our own data table
    got = eval(entry["to"], scope)  # noqa: S307
    torch.testing.assert_close(got, want, atol=entry["atol"], rtol=entry["atol"])


@pytest.mark.parametrize("op", sorted(REWRITES))
def test_rewrite_replaces_a_fallback_with_ops_that_have_npu_kernels(op):
    reg = load_aten()
    assert not reg.has_kernel(op), op
    for used in REWRITES[op]["uses"]:
        assert reg.has_kernel(used), (op, used)


def _references():
    from migrate.emulate.fused import FUSED

    return types.SimpleNamespace(**{name: op.reference for name, op in FUSED.items()})


def _schema_args(schema: str) -> list[str]:
    inner = schema[schema.index("(") + 1 : schema.index(") ->")]
    return [
        re.split(r"\s+", a.strip().split("=")[0])[-1] for a in inner.split(",") if a.strip() not in ("", "*")
    ]


@pytest.mark.parametrize("op", sorted(REWRITES))
def test_torch_npu_ops_of_a_rewrite_have_the_wheels_signatures(op):
    custom = load_aten().custom
    for used in REWRITES[op]["uses"]:
        if used.startswith("npu::"):
            name = used.removeprefix("npu::")
            reference = getattr(_references(), name)
            assert list(inspect.signature(reference).parameters) == _schema_args(custom[name]["schema"])
            assert f"torch_npu.{name}(" in REWRITES[op]["to"]


def test_library_ops_get_their_own_rewrite_and_an_assisted_one_says_so():
    shown = offered(REWRITES, "torchvision::nms")
    assert shown is not None and shown["safety"] == "assisted" and "max_output_size" in shown["note"]
    assert offered(REWRITES, "aten::nms") is None  # no aten op borrows a library's rewrite
    assert offered(REWRITES, "aten::_linalg_det")["safety"] == "safe"
    with pytest.raises(RewriteError, match="needs a note"):
        checked({"x": {**REWRITES["torchvision::nms"], "note": ""}})
    with pytest.raises(RewriteError, match="unknown key 'safe'"):
        checked({"x": {**REWRITES["_linalg_det"], "safe": True}})


def test_ops_torch_offers_the_assisted_detection_rewrites():
    pytest.importorskip("torchvision")
    from pathlib import Path

    from migrate.ops.aten.census import aten_census
    from migrate.ops.render import render_census

    report = aten_census(f"{Path(__file__).with_name('specs.py')}:detections")
    rows = {r["op"]: r for r in report["ops"]}
    for op in ("torchvision::nms", "torchvision::roi_align"):
        assert rows[op]["status"] == "cpu-fallback"
        assert rows[op]["rewrite"]["safety"] == "assisted" and rows[op]["rewrite"]["note"]
    assert "torch_npu.npu_nms_v4(" in rows["torchvision::nms"]["rewrite"]["to"]
    assert "rewrite (assisted: check the results): torchvision.ops.roi_align" in render_census(report, "text")
