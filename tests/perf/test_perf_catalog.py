"""The finding catalog is checked when it loads: a row or detector that does not fit fails
naming itself, never silently dropped."""

from __future__ import annotations

import pytest
import yaml

from migrate.perf import catalog as cat
from migrate.perf.catalog import DETECTORS, CatalogError, load_catalog, make


def write(tmp_path, rows) -> object:
    path = tmp_path / "findings.yaml"
    path.write_text(yaml.safe_dump({"findings": rows}), encoding="utf-8")
    return path


def shipped_rows() -> list[dict]:
    return yaml.safe_load(cat.CATALOG_FILE.read_text(encoding="utf-8"))["findings"]


def test_the_shipped_catalog_loads_and_every_detector_has_a_row():
    entries = load_catalog()
    assert set(DETECTORS) <= set(entries)
    profile_rows = {e.id for e in entries.values() if "profile" in e.sources}
    assert profile_rows == set(DETECTORS)
    for entry in entries.values():
        assert entry.fix.strip() and entry.why.strip()


def test_a_rule_the_rule_table_lacks_fails_the_load(tmp_path):
    rows = shipped_rows()
    rows[0]["rule"] = "MIG999"
    with pytest.raises(CatalogError, match="MIG999"):
        load_catalog(write(tmp_path, rows))


def test_a_profile_row_without_a_detector_fails_the_load(tmp_path):
    rows = shipped_rows() + [{**shipped_rows()[0], "id": "PERF199", "name": "nobody-detects-this"}]
    with pytest.raises(CatalogError, match="PERF199 comes from profiles but no detector"):
        load_catalog(write(tmp_path, rows))


def test_a_detector_without_a_row_fails_the_load(tmp_path):
    rows = [r for r in shipped_rows() if r["id"] != "PERF203"]
    with pytest.raises(CatalogError, match="detector PERF203 has no row"):
        load_catalog(write(tmp_path, rows))


@pytest.mark.parametrize(
    "change, says",
    [
        ({"kind": "speed"}, "kind must be one of"),
        ({"sources": ["profiler"]}, "sources is a list"),
        ({"limits": {"min_share": "high"}}, "limits maps names to numbers"),
        ({"colour": "red"}, "unknown key"),
        ({"fix": ""}, "'fix' must be a non-empty string"),
        ({"id": "P101"}, "id is PERFnnn"),
    ],
)
def test_a_row_that_breaks_the_schema_names_itself(tmp_path, change, says):
    rows = shipped_rows()
    rows[3] = {**rows[3], **change}
    with pytest.raises(CatalogError, match=says):
        load_catalog(write(tmp_path, rows))


def test_a_duplicate_id_fails(tmp_path):
    rows = shipped_rows()
    rows.append(dict(rows[0]))
    with pytest.raises(CatalogError, match="listed twice"):
        load_catalog(write(tmp_path, rows))


def test_make_takes_name_kind_rule_and_fix_from_the_row():
    f = make("PERF105", "Adam.step took 2 ms", {}, 2000.0, fused="torch_npu.optim.NpuFusedAdam")
    assert (f.name, f.kind, f.rule) == ("unfused-optimizer", "compute", "MIG901")
    assert "torch_npu.optim.NpuFusedAdam" in f.fix and "{" not in f.fix
    with pytest.raises(CatalogError, match="rule MIG998"):
        make("PERF104", "x", {}, None, rule="MIG998")


def test_a_missing_limit_is_an_error_naming_the_row():
    with pytest.raises(CatalogError, match="PERF201 has no limit 'nope'"):
        cat.limit("PERF201", "nope")


def test_a_detector_must_register_under_a_finding_id():
    with pytest.raises(ValueError, match="finding ID"):
        DETECTORS.add("host-syncs", lambda a: [])
