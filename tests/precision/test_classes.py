"""Precision classes are one record each: dtype facts (checked against torch.finfo) joined
with thresholds.yaml's bands; a class on one side only fails at load, naming the file and
the class."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import yaml

from migrate.precision import classes as C
from migrate.precision.judge import judge
from migrate.precision.thresholds import load_gate

FP8 = "float8_e4m3fn"


def _yaml_with(tmp_path, name: str | None = None, drop: str | None = None):
    doc = yaml.safe_load(C.DEFAULTS_FILE.read_text())
    if name is not None:
        doc["dtypes"][name] = {**doc["dtypes"]["bfloat16"], "why": "fp8 test class"}
    if drop is not None:
        doc["dtypes"].pop(drop)
    path = tmp_path / "thresholds.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("name", [n for n, f in C.FACTS.items() if f.dtypes])
def test_dtype_facts_are_torch_finfo(name):
    facts = C.FACTS[name]
    for dtype in facts.dtypes:
        info = torch.finfo(getattr(torch, dtype))
        assert (info.eps, info.tiny) == (2.0**-facts.mantissa, 2.0**facts.min_exp), dtype
    record = C.registry()[name]
    assert record.unit_roundoff == torch.finfo(getattr(torch, name)).eps / 2
    assert record.smallest_normal == torch.finfo(getattr(torch, name)).tiny


def test_hf32_is_float16_mantissa_in_float32_range():
    hf32 = C.registry()["hf32"]
    assert hf32.unit_roundoff == torch.finfo(torch.float16).eps / 2
    assert hf32.smallest_normal == torch.finfo(torch.float32).tiny
    assert hf32.dtypes == ()  # no tensor is hf32: only a run's flags make it


def test_order_is_least_precise_first_and_every_shipped_dtype_has_a_class():
    reg = C.registry()
    rounds = [r.unit_roundoff for r in reg.records]
    assert rounds == sorted(rounds, reverse=True)
    assert reg.loosest("float32", "hf32", None, "default") == "hf32"
    assert reg.loosest("hf32", "float16") == "float16"  # same mantissa, narrower range
    for dtype in ("bfloat16", "float16", "float32", "float64", "complex64", "complex128"):
        assert reg.of_dtype(dtype) is not None, dtype
    assert reg.of_dtype("int64") is None
    assert set(load_gate().dtypes) == {*reg.names, C.EXACT}


def test_a_class_in_the_yaml_only_fails_at_load_naming_file_and_class(tmp_path):
    with pytest.raises(C.PrecisionClassError) as err:
        C.load(_yaml_with(tmp_path, FP8))
    assert "thresholds.yaml" in str(err.value) and f"dtypes.{FP8}" in str(err.value)
    assert "no dtype facts" in str(err.value)


def test_a_class_in_the_facts_only_fails_at_load_naming_file_and_class():
    facts = {**C.FACTS, FP8: C.DtypeFacts(3, -6, (FP8,))}
    with pytest.raises(C.PrecisionClassError) as err:
        C.load(C.DEFAULTS_FILE, facts)
    assert "thresholds.yaml" in str(err.value) and f"dtypes.{FP8} is missing" in str(err.value)


def test_a_shipped_class_dropped_from_the_yaml_fails(tmp_path):
    with pytest.raises(C.PrecisionClassError, match=r"thresholds.yaml: dtypes.hf32 is missing"):
        C.load(_yaml_with(tmp_path, drop="hf32"))


def test_a_class_without_its_bands_fails(tmp_path):
    doc = yaml.safe_load(C.DEFAULTS_FILE.read_text())
    del doc["dtypes"]["float16"]["atol_rms"]
    path = tmp_path / "thresholds.yaml"
    path.write_text(yaml.safe_dump(doc))
    named = r"thresholds.yaml: dtypes.float16: the class has no atol_rms"
    with pytest.raises(C.PrecisionClassError, match=named):
        C.load(path)


def test_a_dtype_in_two_classes_fails():
    f32 = C.FACTS["float32"]
    facts = {**C.FACTS, "float32": dataclasses.replace(f32, dtypes=(*f32.dtypes, "float64"))}
    with pytest.raises(C.PrecisionClassError, match="'float64' is in both"):
        C.load(C.DEFAULTS_FILE, facts)


def test_a_class_on_both_sides_is_judged_by_its_own_facts(tmp_path):
    info = torch.finfo(torch.float8_e4m3fn)
    facts = {**C.FACTS, FP8: C.DtypeFacts(3, -6, (FP8,))}
    assert (info.eps, info.tiny) == (2.0**-3, 2.0**-6)
    reg = C.load(_yaml_with(tmp_path, FP8), facts)
    assert reg.names[0] == FP8  # least precise of all
    assert reg.of_dtype(FP8) == FP8 and reg.loosest("bfloat16", FP8) == FP8
    assert reg.unit_roundoff(FP8) == 2.0**-4 and reg.bands()[FP8]["rtol"] == reg.bands()["bfloat16"]["rtol"]


def test_errors_below_the_smallest_normal_pass_and_exact_tensors_are_judged():
    th = load_gate().for_entry("m", "float16", "float16")
    tiny = C.registry().smallest_normal("float16")
    below = {"rmse": tiny / 2, "cosine": 0.0, "rel_err": 1.0}
    assert judge(below, th) == ("pass", f"error below the smallest normal float16 ({tiny:.2g})")
    exact = load_gate().for_entry("m", "int64", "int64")
    assert exact["class"] == C.EXACT
    assert judge({"rmse": 1e-30, "cosine": 0.5, "rel_err": 1e-30}, exact)[0] == "fail"
