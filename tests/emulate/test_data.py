"""The emulation's data: supported torch versions, and the torch_npu surface from the wheel."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

# On the torch torch_npu pins too (.ci/run's torch 2.14 job runs -m pinned_torch).
pytestmark = pytest.mark.pinned_torch

from migrate.core.errors import UsageError  # noqa: E402
from migrate.emulate.data import check_torch, pinned_torch, supported_torch, surface  # noqa: E402


def test_installed_torch_is_supported():
    assert ".".join(torch.__version__.split(".")[:2]) in supported_torch()
    assert check_torch() == torch.__version__.split("+")[0]


def test_supported_torch_follows_the_wheel_pin():
    """torch_npu 2.14.0's wheel requires torch==2.14.0.*: 2.14 is supported because of that
    pin (read from the registry built from the wheel), 2.13 because the tests run on it."""
    from migrate.ops.registry import load_aten

    assert load_aten("2.14.0").requires_torch == "torch==2.14.0.*"
    assert pinned_torch() == {"2.14": "2.14.0"}
    assert supported_torch() == ["2.13", "2.14"]


def test_unsupported_torch_fails_with_a_clear_message(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.9.1+cpu")
    monkeypatch.delenv("MIGRATE_EMULATE_ANY_TORCH", raising=False)
    with pytest.raises(
        UsageError,
        match=r"NPU emulation supports torch 2\.13, 2\.14 \(torch_npu "
        r"2\.14\.0 pins 2\.14; installed: 2\.9\.1\); set "
        r"MIGRATE_EMULATE_ANY_TORCH=1",
    ):
        check_torch()
    monkeypatch.setenv("MIGRATE_EMULATE_ANY_TORCH", "1")
    assert check_torch() == "2.9.1"


def test_surface_holds_the_wheel_names():
    surf = surface()
    assert {"NpuFusedAdamW", "NpuFusedLamb", "NpuFusedSGD"} <= surf.names("torch_npu.optim")
    assert {"autocast", "GradScaler"} <= surf.names("torch_npu.npu.amp")
    assert {"synchronize", "set_device", "Stream", "Event"} <= surf.names("torch_npu.npu")
    assert "npu_fusion_attention" in surf.custom_ops and "npu_fusion_attention" in surf.names("torch_npu")
    assert "torch_npu.contrib.transfer_to_npu" in surf.modules


def test_surface_data_is_what_the_tool_builds_from_the_wheel():
    """modules.yaml is generated from the wheel (tools/build_emulate_surface.py): rebuilt in
    memory, it gives the same names."""
    import importlib.util
    from pathlib import Path

    import npu_wheel

    try:
        wheel = npu_wheel.npu_wheel()
    except Exception as exc:  # noqa: BLE001 - no wheel and no index
        pytest.skip(f"torch_npu wheel unavailable: {exc}")
    path = Path(__file__).resolve().parents[2] / "tools" / "build_emulate_surface.py"
    spec = importlib.util.spec_from_file_location("build_emulate_surface", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    for mod in ("torch_npu.optim", "torch_npu.npu.amp", "torch_npu.profiler"):
        assert set(tool.module_names(wheel, mod)) == set(surface().names(mod)) - set(
            surface().custom_ops if mod == "torch_npu" else ()
        )


def test_also_tested_torch_is_what_ci_installs():
    """emulate.yaml's also_tested_torch is the torch .ci/run installs for the test suite, and
    CI runs the emulation tests on each torch a torch_npu release pins."""
    import re
    from pathlib import Path

    from migrate.emulate.data import settings

    folder = Path(__file__).resolve().parents[2] / ".ci"
    ci = "\n".join(p.read_text(encoding="utf-8") for p in (folder / "run", *folder.glob("*.txt")))
    pins = re.findall(r"(?m)(?:^|[\s'\"])torch==(\d+\.\d+\.\d+)", ci)
    installed = {".".join(v.split(".")[:2]) for v in pins}
    assert set(settings().also_tested_torch) <= installed
    assert set(pinned_torch()) <= installed
