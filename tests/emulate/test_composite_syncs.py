"""Host syncs inside a composite: ``torch._grouped_mm`` (no NPU kernel in torch_npu 2.14.0;
torch's composite serves the NPU and reads each expert's offset with ``item()``) is reported
as a host sync per expert and call, named as the composite, with the user's line, by the
emulation and by ``migrate ops --torch`` alike; its results are the CPU's."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from run_migrate import migrate as run_migrate

torch = pytest.importorskip("torch")
if not hasattr(torch, "_grouped_mm"):
    pytest.skip("this torch has no _grouped_mm", allow_module_level=True)

HERE = Path(__file__).resolve().parent
migrate = partial(run_migrate, cwd=HERE)


def test_grouped_mm_syncs_are_reported_as_the_composites(tmp_path):
    import moe_model

    report, out = tmp_path / "report.json", tmp_path / "out.json"
    code = "import json, sys, moe_model; json.dump(moe_model.step('npu'), open(sys.argv[1], 'w'))"
    run = migrate("run", "--emulate", "npu", "--report", str(report), "--", "python", "-c", code, str(out))
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(out.read_text()) == pytest.approx(moe_model.step("cpu"), rel=1e-3)
    rows = [f for f in json.loads(report.read_text())["findings"] if f["op"] == "aten::_grouped_mm"]
    assert len(rows) == 1 and rows[0]["kind"] == "host_sync", rows
    assert rows[0]["count"] == 2 * moe_model.EXPERTS  # one item() per expert, per call
    assert rows[0]["site"] == "moe_model.py:18" and "aten::_local_scalar_dense" in rows[0]["reason"]


def test_ops_torch_names_the_composite_that_syncs():
    specs = HERE.parent / "ops" / "specs.py"
    run = migrate("ops", "--torch", f"{specs}:grouped_experts", "--format", "json")
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    sync = next(w for w in report["warnings"] if w["op"] == "aten::_grouped_mm")
    assert sync["kind"] == "host-sync" and sync["count"] == 3
    line = next(i for i, text in enumerate(specs.read_text().splitlines(), 1) if "torch._grouped_mm(" in text)
    assert "calls aten::_local_scalar_dense" in sync["why"] and sync["locations"][0].endswith(
        f"specs.py:{line}"
    )
