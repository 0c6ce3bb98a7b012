"""Property tests for the dump reader and the gate loader (issue 18, item 8): a manifest of
any shape is read or refused with one UsageError, and a comparison against it does the same;
a gate that loads holds only finite thresholds in range."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from fuzzing import fuzz
from hypothesis import given
from hypothesis import strategies as st

from migrate.core.errors import UsageError
from migrate.precision.compare import compare_dumps
from migrate.precision.manifest import Dump
from migrate.precision.thresholds import load_gate, threshold_keys

torch = pytest.importorskip("torch")

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**12), st.floats(), st.text(max_size=6))
FIELDS = ["name", "call", "kind", "index", "dtype", "shape", "stats", "tensor", "file", "crc32"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    from migrate.precision.dumper import dump

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    out = tmp_path_factory.mktemp("ref") / "ref"
    with torch.no_grad(), dump(model, out, params=True):
        model(torch.randn(2, 4))
    return out


def _record(real: dict):
    """A real record with some fields replaced by anything."""
    return st.dictionaries(
        st.sampled_from(FIELDS),
        st.one_of(
            SCALARS,
            st.lists(SCALARS, max_size=3),
            st.dictionaries(st.sampled_from(["min", "max", "norm", "nan", "sketch"]), SCALARS, max_size=3),
        ),
        max_size=3,
    ).map(lambda changes: {**real, **changes})


@fuzz(60)
@given(data=st.data())
def test_a_changed_manifest_is_read_or_refused(reference, tmp_path, data):
    doc = json.loads((reference / "manifest.json").read_text())
    i = data.draw(st.integers(0, len(doc["records"]) - 1))
    doc["records"][i] = data.draw(_record(doc["records"][i]))
    if data.draw(st.booleans()):
        doc["meta"] = {
            **doc["meta"],
            **data.draw(
                st.dictionaries(
                    st.sampled_from(["weights", "modules", "precision", "stats_only", "apis"]),
                    st.one_of(
                        SCALARS,
                        st.lists(SCALARS, max_size=2),
                        st.dictionaries(st.text(max_size=3), SCALARS, max_size=2),
                    ),
                    max_size=2,
                )
            ),
        }
    target = tmp_path / "t"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(reference, target)
    (target / "manifest.json").write_text(json.dumps(doc))
    try:
        Dump(target)
        result = compare_dumps(reference, target)
    except UsageError as exc:
        assert "\n" not in str(exc)
        return
    assert result.counts()


@fuzz(60)
@given(
    doc=st.recursive(
        SCALARS,
        lambda kids: (
            st.lists(kids, max_size=3)
            | st.dictionaries(
                st.sampled_from(["format", "meta", "records", "input_specs", *FIELDS]), kids, max_size=4
            )
        ),
        max_leaves=20,
    )
)
def test_any_json_as_a_manifest(doc, tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    try:
        Dump(tmp_path)
    except UsageError as exc:
        assert "\n" not in str(exc)


KEYS = sorted(threshold_keys())
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(),
    st.integers(-5, 5),
    st.text(max_size=4),
    st.lists(st.floats(), max_size=2),
)


@fuzz(150)
@given(
    dtypes=st.dictionaries(
        st.sampled_from(["float32", "bfloat16", "default", "fp16"]),
        st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=3),
        max_size=2,
    ),
    top=st.dictionaries(
        st.sampled_from(
            ["allowed_violations", "fail_on_missing", "rel_floor", "min_compared", "grad_floor", "profile"]
        ),
        VALUES,
        max_size=3,
    ),
    overrides=st.lists(
        st.dictionaries(st.sampled_from(["match", "skip", *KEYS[:4]]), VALUES, max_size=3), max_size=2
    ),
)
def test_a_gate_that_loads_can_fail(dtypes, top, overrides, tmp_path):
    import yaml

    path = tmp_path / "gate.yaml"
    path.write_text(yaml.safe_dump({**top, "dtypes": dtypes, "overrides": overrides}))
    try:
        gate = load_gate(path)
    except UsageError as exc:
        assert "\n" not in str(exc)
        return
    for entries in [*gate.dtypes.values(), *gate.overrides]:
        for key, value in entries.items():
            if key in ("match", "skip", "why"):
                continue
            assert value is None or (not isinstance(value, bool) and math.isfinite(value)), key
    assert isinstance(gate.fail_on_missing, bool) and gate.allowed_violations >= 0
    assert math.isfinite(gate.rel_floor) and 0 <= gate.min_compared <= 1
