"""The device-type table (rules/device_types.yaml, migrate/scan/device_types.py): typed, and
checked when it loads."""

from __future__ import annotations

import pytest

from migrate.core.errors import RuleError
from migrate.scan.device_types import device_types


def test_the_shipped_table_names_the_vendors_and_not_cuda_or_the_npu():
    table = device_types()
    assert {"cuda", "npu", "xla", "hpu", "mlu", "xpu"} <= table.types
    assert {"xla", "hpu", "mlu", "xpu", "tpu", "habana", "cambricon", "intel", "rocm"} <= set(table.vendors)
    assert not {"cuda", "npu", "cpu", "meta"} & set(table.vendors)


HEAD = "device_types: [cuda]\nnot_vendors: [cuda]\n"


@pytest.mark.parametrize(
    "text, why",
    [
        (HEAD, "vendor_words"),
        (HEAD + "vendor_words: [Intel]\n", "not a lower-case word: 'Intel'"),
        (HEAD + "vendor_words: [tpu, 3]\n", r"vendor_words' \[1\] must be a string"),
        (
            "device_types: [cuda]\nnot_vendors: [npu]\nvendor_words: []\n",
            "not_vendors: not a device type: npu",
        ),
        ("device_types: [cuda]\nnot_vendors: []\nvendor_words: []\nwords: [x]\n", "words"),
        ("- cuda\n", "must be a mapping"),
    ],
)
def test_a_table_breaking_its_schema_is_refused_at_load(tmp_path, text, why):
    bad = tmp_path / "device_types.yaml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(RuleError, match=why):
        device_types(str(bad))


def test_a_table_within_its_schema_loads(tmp_path):
    ok = tmp_path / "device_types.yaml"
    ok.write_text("device_types: [cuda, xpu, cpu]\nnot_vendors: [cuda, cpu]\nvendor_words: [intel]\n")
    assert device_types(str(ok)).vendors == ("intel", "xpu")
