"""The chip peaks table: device names as profiles record them resolve to the right row, and
a bad row fails the load naming the file and the row."""

from __future__ import annotations

import pytest

from migrate.perf.analyze import chips as chip_table
from migrate.perf.analyze.chips import ChipTableError, chips, find_chip


@pytest.mark.parametrize(
    "name, row",
    [
        ("NVIDIA A100-PG509-200", "A100"),  # the HTA trace's deviceProperties name
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("NVIDIA H200", "H200"),
        ("Ascend910B3", "Ascend910B"),
        ("Ascend910B2C", "Ascend910B"),
        ("Ascend910_9391", "Ascend910B"),  # an A3 die, as torch.npu.get_device_name() gives it
        ("Ascend910A", "Ascend910"),
        ("Ascend910ProA", "Ascend910"),
        ("Ascend310P3", "Ascend310P"),
        ("Tesla V100-SXM2-32GB", None),  # not in the table: no MFU rather than a guess
        ("", None),
    ],
)
def test_device_names_resolve(name, row):
    found = find_chip(name)
    assert (found.id if found else None) == row


def test_every_row_has_a_source_and_positive_peaks():
    for chip in chips():
        assert chip.source and chip.peak_tflops
        assert all(v > 0 for v in chip.peak_tflops.values())


@pytest.mark.parametrize(
    "row, says",
    [
        ("- {id: X, match: ['X'], vendor: nvidia, peak_tflops: {bf17: 3}, source: s}", "dtype 'bf17'"),
        ("- {id: X, match: ['X('], vendor: nvidia, peak_tflops: {bf16: 3}, source: s}", "regular expression"),
        ("- {id: X, match: ['X'], vendor: nvidia, peak_tflops: {bf16: -1}, source: s}", "positive number"),
        ("- {id: X, match: ['X'], vendor: nvidia, peak_tflops: {bf16: 1}}", "needs key 'source'"),
        ("- {id: X, match: ['X'], vendor: amd, peak_tflops: {bf16: 1}, source: s}", "'amd' is not one of"),
        ("- {id: X, match: [], vendor: nvidia, peak_tflops: {bf16: 1}, source: s}", "lists no pattern"),
    ],
)
def test_a_bad_row_names_the_file_and_row(tmp_path, row, says):
    path = tmp_path / "chips.yaml"
    path.write_text("chips:\n  " + row + "\n", encoding="utf-8")
    with pytest.raises(ChipTableError, match="chips.yaml") as err:
        chip_table.chips.__wrapped__(path)
    assert says in str(err.value) and "row 1" in str(err.value)
