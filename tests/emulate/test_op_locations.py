"""Op locations: an op dispatched inside an installed library is placed at the user's line
that called the library (the library's line kept as ``via``), and a backward op at the
forward line that made it, in ``migrate ops --torch --train`` and in the emulation's
findings (which had ``<backward>``)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from run_migrate import migrate as run_migrate

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
migrate = partial(run_migrate, cwd=HERE)


def test_ops_torch_locates_library_ops_and_backward_ops_at_the_users_lines(tmp_path):
    import library_calls

    from migrate.ops.aten.census import aten_census

    library = library_calls.install(tmp_path)
    report = aten_census(f"{HERE / 'library_calls.py'}:build", train=True)
    rows = {r["op"]: r for r in report["ops"]}
    call, direct = library_calls.line_of("LIBRARY CALL"), library_calls.line_of("DIRECT CALL")

    def lines(op):
        return [loc.rsplit(":", 1) for loc in rows[op]["locations"]]

    for op, line in (("aten::special_i1", call), ("aten::i0", call), ("aten::special_i0e", direct)):
        assert [int(n) for _, n in lines(op)] == [line], (op, rows[op]["locations"])
        assert all(path.endswith("library_calls.py") for path, _ in lines(op))
    assert rows["aten::i0"]["phases"] == ["backward"]  # i1's derivative, at the library call
    assert rows["aten::special_i1"]["via"][0].endswith(f"{library.parent.name}/__init__.py:5")
    assert "via" not in rows["aten::special_i0e"]


def _emulated_library_calls(tmp_path):
    """library_calls.step('npu') run emulated: the finished run and its report's path."""
    code = (
        "import sys, pathlib, library_calls; library_calls.install(pathlib.Path(sys.argv[1])); "
        "library_calls.step('npu')"
    )
    report = tmp_path / "report.json"
    run = migrate(
        "run", "--emulate", "npu", "--report", str(report), "--", "python", "-c", code, str(tmp_path)
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return run, report


def test_emulated_backward_findings_carry_the_forward_line(tmp_path):
    import library_calls

    run, report = _emulated_library_calls(tmp_path)
    rows = {(f["op"], f["module"]): f["site"] for f in json.loads(report.read_text())["findings"]}
    call, direct = library_calls.line_of("LIBRARY CALL"), library_calls.line_of("DIRECT CALL")
    assert rows[("aten::special_i1", "<root>")] == f"library_calls.py:{call}"  # not the library's line
    assert rows[("aten::i0", "<backward>")] == f"library_calls.py:{call}"
    assert rows[("aten::special_i1e", "<backward>")] == f"library_calls.py:{direct}"


def test_emulated_findings_carry_the_library_line_as_via_in_json_and_text(tmp_path):
    import library_calls

    run, report = _emulated_library_calls(tmp_path)
    rows = {(f["op"], f["module"]): f for f in json.loads(report.read_text())["findings"]}
    call = library_calls.line_of("LIBRARY CALL")
    inside = rows[("aten::special_i1", "<root>")]  # dispatched inside fakelib.bessel
    assert inside["site"] == f"library_calls.py:{call}"
    assert len(inside["via"]) == 1 and inside["via"][0].endswith("fakelib/__init__.py:5")
    assert "via" not in rows[("aten::special_i0e", "<root>")]  # the model's own call
    assert "via" not in rows[("aten::i0", "<backward>")]  # placed at its forward line
    line = next(t for t in run.stderr.splitlines() if "aten::special_i1 in <root>" in t)
    assert line.startswith(f"library_calls.py:{call}: cpu_fallback:") and f" via {inside['via'][0]}: " in line


VIEW_WRITES = """
import sys, torch
torch.manual_seed(0)
x = torch.randn(1, 4, 2, dtype=torch.float64, device=sys.argv[1], requires_grad=True)
b = x.clone()
b[..., 0] = b[..., 0] * 2
y = b[..., 1]
y[...] = 1.0
(b * b).sum().backward()
print(x.grad.cpu().flatten().tolist())
"""


def test_in_place_writes_into_views_of_autograd_tensors_run_emulated_to_the_end():
    """kornia's gradcheck shape: the view ``y`` written in place had its grad_fn rebuilt
    on read, and the emulator read it from inside dispatch (a deadlock: it never ended)."""
    import subprocess
    import sys

    on_cpu = subprocess.run([sys.executable, "-c", VIEW_WRITES, "cpu"], capture_output=True, text=True)
    assert on_cpu.returncode == 0, on_cpu.stderr[-2000:]
    run = migrate("run", "--emulate", "npu", "--", "python", "-c", VIEW_WRITES, "npu", timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout == on_cpu.stdout  # the gradient the CPU gives: 8 * x in column 0, 0 in 1
    assert "ops on npu" in run.stderr and " 0 ops on npu" not in run.stderr
