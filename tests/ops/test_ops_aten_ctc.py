"""CTC: ``F.ctc_loss`` with length tensors runs torch_npu's ``_ctc_loss`` (IntList lengths)
on the device, as ctc_loss.Tensor's plain-tensor path does; the Tensor-lengths overload,
which torch_npu has no kernel for, is a CPU fallback with the rewrite to list lengths."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from migrate.ops.aten.census import aten_census  # noqa: E402
from migrate.ops.aten.fastpath import plain_tensor_call  # noqa: E402
from migrate.ops.registry import load_aten  # noqa: E402

SPECS = Path(__file__).with_name("specs.py")


def _rows(report) -> dict:
    return {r["op"]: r for r in report["ops"]}


def test_ctc_loss_with_length_tensors_is_judged_as_the_device_runs_it():
    report = aten_census(f"{SPECS}:ctc", train=True)
    rows = _rows(report)
    assert rows["aten::_ctc_loss"]["status"] == "supported"
    assert rows["aten::_ctc_loss_backward"]["status"] == "supported"
    assert "aten::_ctc_loss.Tensor" not in rows and report["summary"]["cpu-fallback"] == 0


def test_the_tensor_lengths_overload_is_a_fallback_with_the_list_rewrite():
    report = aten_census(f"{SPECS}:ctc_direct", train=True)
    row = _rows(report)["aten::_ctc_loss.Tensor"]
    assert row["status"] == "cpu-fallback"
    assert row["rewrite"]["to"].endswith("input_lengths.tolist(), target_lengths.tolist())")
    assert row["locations"][0].startswith("tests/ops/specs.py:")


def test_plain_tensor_call_converts_integral_lengths_only():
    reg = load_aten()
    lp, tg = torch.zeros(3, 1, 4), torch.ones(1, 2, dtype=torch.long)
    args, kwargs = plain_tensor_call(
        reg, "ctc_loss", (lp, tg, torch.tensor([3])), {"target_lengths": torch.tensor([2])}
    )
    assert args[2] == [3] and kwargs == {"target_lengths": [2]} and args[0] is lp
    assert plain_tensor_call(reg, "ctc_loss", (lp, tg, [3], [2]), {}) is None
    assert plain_tensor_call(reg, "ctc_loss", (lp, tg, torch.tensor([3.0]), [2]), {}) is None
    assert plain_tensor_call(reg, "mse_loss", (lp, lp), {}) is None
