"""Fixtures for op-coverage tests: real exported graphs and ONNX's own node test models."""

from __future__ import annotations

import warnings

import pytest

onnx = pytest.importorskip("onnx")


def _block_model():
    import torch

    class Blk(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)
            self.norm = torch.nn.LayerNorm(8)

        def forward(self, x):
            return torch.nn.functional.gelu(self.norm(self.fc(x)))

    torch.manual_seed(0)
    return Blk().eval(), (torch.randn(2, 8),)


@pytest.fixture
def op_builder(tmp_path, monkeypatch, repo_root):
    """tools/build_op_registry.py writing into ``tmp_path/op_registry`` (the shipped
    aten/notes.yaml copied there): (the tool's module, that folder)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bor", repo_root / "tools/build_op_registry.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    out = tmp_path / "op_registry"
    (out / "aten").mkdir(parents=True)
    (out / "aten/notes.yaml").write_text((repo_root / "op_registry/aten/notes.yaml").read_text())
    monkeypatch.setattr(tool, "OUT", out)
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    return tool, out


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """A Linear + LayerNorm + GELU block exported twice: torch.onnx.export's default
    (dynamo, opset 20 in this torch) and with opset_version=18."""
    torch = pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("exported")
    model, args = _block_model()
    paths = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, kw in (("default", {}), ("opset18", {"opset_version": 18})):
            path = folder / f"block_{key}.onnx"
            torch.onnx.export(model, args, str(path), verbose=False, **kw)
            paths[key] = path
    return paths


@pytest.fixture(scope="session")
def exported_einsum(tmp_path_factory):
    """Attention scores via torch.einsum, exported with opset_version=18 (keeps Einsum)."""
    torch = pytest.importorskip("torch")

    class Scores(torch.nn.Module):
        def forward(self, q, k):
            return torch.einsum("bhqd,bhkd->bhqk", q, k).softmax(-1)

    path = tmp_path_factory.mktemp("einsum") / "scores.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Scores(), (torch.randn(2, 3, 4, 5), torch.randn(2, 3, 6, 5)), str(path), opset_version=18
        )
    return path
