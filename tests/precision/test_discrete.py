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


def _moe(fault: float = 1.0):
    """A router's top-2 of 4 experts for 8 tokens (row 3 flipped in the target), then the
    experts' (8, 16) output, one expert's gathered (5, 16) rows and the block's (2, 4, 16)
    output: equal to the reference except on the flipped row (another expert ran), times
    ``fault`` everywhere."""
    import numpy as np

    from migrate.precision.thresholds import load_gate

    rng = np.random.default_rng(0)
    ref_idx = np.stack([rng.permutation(4)[:2] for _ in range(8)])
    tgt_idx = ref_idx.copy()
    tgt_idx[3] = [i for i in range(4) if i not in ref_idx[3]]
    tgt_idx[5] = tgt_idx[5][::-1]  # the same choices in another order: not a flip
    out = rng.standard_normal((8, 16)).astype(np.float32)
    bad = out * fault
    bad[3] = rng.standard_normal(16)
    gathered = rng.standard_normal((5, 16)).astype(np.float32)
    tensors = {
        "l0.mlp.gate": (ref_idx, tgt_idx),
        "l0.mlp.experts": (out, bad),
        "l0.mlp.experts.act": (gathered, gathered[::-1].copy()),
        "l0.mlp": (out.reshape(2, 4, 16), bad.reshape(2, 4, 16)),
    }
    th = load_gate().for_entry("x", "float32", "float32", None)
    entries = [
        _e("l0.mlp.gate", dtype="int64"),
        _e("l0.mlp.experts.act"),
        _e("l0.mlp.experts"),
        _e("l0.mlp"),
    ]
    return entries, lambda e: (*tensors[e["name"]], th)


def test_the_parent_output_is_judged_on_the_rows_whose_decision_did_not_flip():
    entries, arrays = _moe()
    soften_flips(entries, arrays)
    assert [e["status"] for e in entries] == ["warn", "warn", "warn", "warn"]
    assert "1 of 8 rows" in entries[0]["reason"]
    assert "on the 7 of 8 rows whose decision did not flip they pass" in entries[3]["reason"]
    assert "rows whose decision" not in entries[1]["reason"]  # gathered rows: not lined up


def test_a_fault_after_a_flip_still_fails_on_the_other_rows():
    entries, arrays = _moe(fault=1.2)
    soften_flips(entries, arrays)
    assert [e["status"] for e in entries] == ["warn", "warn", "fail", "fail"]
    assert entries[3]["reason"].startswith("on the 7 of 8 rows whose decision did not flip: ")


def test_replay_tensors_are_judged_the_same_way():
    """replay keeps a failing output's tensors as torch tensors: the same verdicts."""
    import torch

    for fault, want in ((1.0, ["warn"] * 4), (1.2, ["warn", "warn", "fail", "fail"])):
        entries, arrays = _moe(fault)

        def as_torch(e, arrays=arrays):
            ref, tgt, th = arrays(e)
            return torch.from_numpy(ref.copy()), torch.from_numpy(tgt.copy()), th

        soften_flips(entries, as_torch)
        assert [e["status"] for e in entries] == want
