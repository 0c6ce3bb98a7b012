"""A flipped integer decision softens failures inside its parent module only."""

from __future__ import annotations

from migrate.precision.discrete import soften_flips


def _e(name, status="fail", dtype="float32", kind="forward.output"):
    return {
        "name": name,
        "call": 0,
        "kind": kind,
        "index": 0,
        "dtype": dtype,
        "ref_dtype": dtype,
        "status": status,
        "reason": "cosine 0.9 < 0.999",
    }


def test_flip_scope_ends_at_the_parent_output():
    entries = [
        _e("l0.mlp.gate", dtype="int64"),
        _e("l0.mlp.experts.0"),
        _e("l0.mlp.experts.1", status="missing"),
        _e("l0.mlp"),
        _e("l0"),
        _e("l1"),
    ]
    soften_flips(entries)
    assert [e["status"] for e in entries] == ["warn", "warn", "warn", "warn", "fail", "fail"]
    assert "decision flipped: l0.mlp.gate#0" in entries[1]["reason"]


def test_float_failures_and_int_shape_errors_are_not_softened():
    shape = _e("l0.gate", dtype="int64")
    shape["reason"] = "shape mismatch: ref [2] vs target [3]"
    entries = [_e("l0.proj"), shape, _e("l0.other")]
    soften_flips(entries)
    assert [e["status"] for e in entries] == ["fail", "fail", "fail"]
