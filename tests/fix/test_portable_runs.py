"""The portable port of a training script runs on CPU without torch_npu, and computes the
original's loss bit for bit; the multi-backend library still imports and dispatches."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from .goldens import SAMPLES, migrate_copy

torch = pytest.importorskip("torch")


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def no_torch_npu(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_npu", None)  # `import torch_npu` raises ImportError
    assert not hasattr(torch, "npu")


def test_portable_training_step_matches_the_original_on_cpu(tmp_path, no_torch_npu, capsys):
    ported = migrate_copy("multi_backend", tmp_path, "portable")
    before = (SAMPLES / "multi_backend" / "train_step.py").read_text()
    after = (ported / "train_step.py").read_text()
    assert after != before and "is_npu_available()" in after and "torch_npu" not in after
    original = _load(SAMPLES / "multi_backend" / "train_step.py", "original_train_step")
    port = _load(ported / "train_step.py", "portable_train_step")
    for steps in (1, 3):
        assert port.train_step(steps) == original.train_step(steps)
    assert "peak 0 MiB" in capsys.readouterr().out


def test_multi_backend_library_imports_and_dispatches_after_the_port(tmp_path, no_torch_npu, monkeypatch):
    ported = migrate_copy("multi_backend", tmp_path, "portable")
    monkeypatch.syspath_prepend(str(ported))
    for name in [m for m in sys.modules if m == "mbk" or m.startswith("mbk.")]:
        monkeypatch.delitem(sys.modules, name)
    import mbk
    import mbk.devices

    assert mbk.SUPPORTED_DEVICES == ("cpu", "cuda", "xpu", "npu")
    assert mbk.default_device() == "cpu"
    assert mbk.devices.distributed_type() == "NO"
    assert mbk.devices.backend_for("cuda") == "nccl" and mbk.devices.backend_for("npu") == "hccl"
