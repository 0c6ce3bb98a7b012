"""Helpers for op-coverage tests (a uniquely named module: conftest names are shared)."""

from __future__ import annotations

import warnings
from functools import cache
from pathlib import Path

import onnx


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
    model = onnx.ModelProto()
    model.CopyFrom(case.model)  # callers may edit it; the cached case stays intact
    return model, list(inputs), list(outputs)
