"""Fixtures for op-coverage tests: real exported graphs and ONNX's own node test models."""

from __future__ import annotations

import warnings
from functools import cache
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")


@cache
def _generated_cases() -> dict:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {c.name: c for c in collect_testcases(None)}


def node_case(name: str):
    """(model, inputs, outputs) of ONNX's node test ``name``: the shipped files under
    onnx/backend/test/data/node when the install has them, else the same cases generated
    by onnx.backend.test.case.node (what produces those files)."""
    from onnx import numpy_helper

    folder = Path(onnx.__file__).parent / "backend/test/data/node" / name
    if (folder / "model.onnx").is_file():
        model = onnx.load(str(folder / "model.onnx"))
        data = folder / "test_data_set_0"

        def read(prefix):
            files = sorted(data.glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
            return [numpy_helper.to_array(onnx.load_tensor(str(f))) for f in files]

        return model, read("input"), read("output")
    case = _generated_cases()[name]
    inputs, outputs = case.data_sets[0]
    return case.model, list(inputs), list(outputs)


@pytest.fixture()
def save_node_case(tmp_path):
    def save(name: str) -> tuple[Path, list, list]:
        model, inputs, outputs = node_case(name)
        path = tmp_path / f"{name}.onnx"
        onnx.save(model, str(path))
        return path, inputs, outputs

    return save


class Block:
    pass


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
