"""The emulated run's raw performance observations (migrate/emulate/perf.py): which shape
changes count as changes between steps."""

from __future__ import annotations

import pytest

from migrate.emulate.perf import PerfRecord

torch = pytest.importorskip("torch")


def matmul(record: PerfRecord, rows: int) -> None:
    x, w = torch.ones(rows, 4), torch.ones(4, 4)
    record.op("aten::mm", [x, w, x @ w], torch.Tensor, lambda: f"train.py:{rows}")


def steps(record: PerfRecord, batches: list[int], after: int | None = None) -> dict:
    """A loop of one matmul per step on ``batches`` rows, each step ended by its optimizer
    step; then, with ``after``, one more of ``after`` rows once the loop is over."""
    for rows in batches:
        matmul(record, rows)
        record.optimizer_step("AdamW")
    if after:
        matmul(record, after)
    return record.to_json()["changing_shapes"]


def test_a_batch_shape_that_changes_inside_the_loop_is_reported():
    assert steps(PerfRecord(), [8, 8, 8, 5, 5]) == {"aten::mm": {"shapes": 2, "site": "train.py:5"}}


def test_what_runs_once_after_the_last_step_is_no_change_between_steps():
    """FSDP2's example saves a checkpoint after its loop: its copies have shapes no step had."""
    assert steps(PerfRecord(), [8, 8, 8, 8], after=3) == {}


def test_only_collectives_that_move_data_are_counted():
    """FSDP2 under DTensor: each functional all-gather is followed by its wait and its
    autograd wrapper, which move nothing; a barrier moves nothing either; the set-up's
    scatter of each parameter to its shards runs once, before the first step."""
    record = PerfRecord()
    shard = torch.ones(256)
    record.op("c10d::scatter_", [shard], torch.Tensor, lambda: "train.py:1")  # set-up: once
    record.optimizer_step("AdamW")
    for name in (
        "_c10d_functional::all_gather_into_tensor",
        "_c10d_functional::wait_tensor",
        "_c10d_functional::_wrap_tensor_autograd",
        "c10d::barrier",
        "c10d::_allgather_base_",
    ):
        record.op(name, [shard], torch.Tensor, lambda: "train.py:1")
    counted = record.to_json()["collectives"]
    assert set(counted) == {"_c10d_functional::all_gather_into_tensor", "c10d::_allgather_base_"}
    assert counted["c10d::_allgather_base_"] == {"count": 1, "bytes": 1024, "smallest": 1024}
