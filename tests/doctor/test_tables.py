"""The doctor's tables: every row has a source, the schema is enforced at load, and the rows
that cite the torch_npu 2.14.0 wheel say what the wheel says."""

from __future__ import annotations

import re
import zipfile
from functools import cache

import pytest
import yaml
from npu_wheel import wheel_path

from migrate.core.rules import default_rules
from migrate.doctor.floors import npu_floors
from migrate.doctor.tables import (
    TABLES,
    DoctorDataError,
    compat_table,
    environment_table,
    error_table,
)
from migrate.doctor.versions import in_range, numeric, parse_cann

# -- every row has a source ---------------------------------------------------------------------


def test_every_compat_row_names_a_source():
    table = compat_table()
    assert len(table.releases) > 30
    for row in table.releases:
        assert row.source.cite()
        assert row.torch_npu.release[:2] == row.torch.release[:2]


def test_every_error_row_names_a_source():
    table = error_table()
    assert {"507015", "507018", "507035", "507046", "500002", "E19010", "EI0006", "EJ0001"} <= set(
        table.codes
    )  # the codes users ask about (issue 21)
    for entry in [*table.codes.values(), *table.messages]:
        assert entry.sources, entry.key
        assert entry.meaning and entry.cause and entry.fix, entry.key
    assert table.torch_npu.source.cite()


def test_every_environment_entry_names_a_source():
    table = environment_table()
    for name in table.__dataclass_fields__:
        value = getattr(table, name)
        for item in value if isinstance(value, tuple) else [value]:
            if hasattr(item, "source"):
                assert item.source.cite(), name


# -- the schema is enforced ---------------------------------------------------------------------


@cache
def _parsed(name: str) -> str:
    return (TABLES / name).read_text(encoding="utf-8")


def _broken(tmp_path, name: str, edit) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    data = yaml.load(_parsed(name), Loader=yaml.CSafeLoader)
    edit(data)
    (folder / name).write_text(
        yaml.dump(data, Dumper=yaml.CSafeDumper, allow_unicode=True, sort_keys=False), encoding="utf-8"
    )
    loader = {"compat.yaml": compat_table, "errors.yaml": error_table, "environment.yaml": environment_table}[
        name
    ]
    return loader.__wrapped__(folder)


@pytest.mark.parametrize(
    "name,edit,message",
    [
        ("compat.yaml", lambda d: d["releases"][0].pop("source"), "missing key 'source'"),
        ("compat.yaml", lambda d: d["releases"][0].update(source="nowhere"), "not in sources"),
        ("compat.yaml", lambda d: d["releases"][0].update(cann="nine"), "not a CANN release"),
        ("compat.yaml", lambda d: d["releases"][0].update(torch_npu="two"), "not a PEP 440"),
        ("compat.yaml", lambda d: d["releases"][0].update(torch="2.9.0"), "not built for torch"),
        ("compat.yaml", lambda d: d["releases"].append(dict(d["releases"][0])), "listed twice"),
        ("compat.yaml", lambda d: d["releases"][0].update(note="x"), "unknown keys"),
        ("compat.yaml", lambda d: d["sources"].update(spare={"url": "https://x.y"}), "no row cites"),
        ("errors.yaml", lambda d: d["codes"][0].update(sources=[]), "non-empty list"),
        ("errors.yaml", lambda d: d["codes"][0].update(code="50701"), "not an ACL code"),
        ("errors.yaml", lambda d: d["codes"].append(dict(d["codes"][0])), "listed twice"),
        ("errors.yaml", lambda d: d["messages"][0].update(pattern="(unclosed"), "does not compile"),
        ("errors.yaml", lambda d: d["messages"][0].pop("fix"), "missing key 'fix'"),
        ("errors.yaml", lambda d: d["sources"]["acl-rt-codes"].update(commit="abc"), "40 hex"),
        ("errors.yaml", lambda d: d["sources"]["acl-rt-codes"].update(url="https://x"), "exactly one"),
        ("errors.yaml", lambda d: d["sources"]["torch-npu-init"].update(package="torch-npu"), "pinned"),
        ("environment.yaml", lambda d: d["libraries"][0].update(provider="gpu"), "provider"),
        ("environment.yaml", lambda d: d["libraries"][0].update(required="yes"), "type"),
        ("environment.yaml", lambda d: d.update(extra_table=[]), "unknown keys"),
    ],
)
def test_a_broken_table_fails_the_load_naming_the_row(tmp_path, name, edit, message):
    with pytest.raises(DoctorDataError, match=re.escape(message)):
        _broken(tmp_path, name, edit)


# -- rows that cite the torch_npu wheel say what the wheel says ---------------------------------


@cache
def _wheel() -> zipfile.ZipFile:
    return zipfile.ZipFile(wheel_path("2.14.0"))


@cache
def _wheel_text(path: str) -> str:
    data = _wheel().read(path)
    return data.decode("latin-1" if path.endswith(".so") else "utf-8", "replace")


def _wheel_sources():
    for table in (error_table(), environment_table(), compat_table()):
        sources = (
            table.sources if hasattr(table, "sources") else {r.source.key: r.source for r in table.releases}
        )
        for src in sources.values():
            if src.package == "torch-npu==2.14.0":
                yield src


def test_cited_wheel_files_exist():
    names = set(_wheel().namelist())
    cited = {src.path for src in _wheel_sources()}
    assert cited and cited <= names, cited - names


def test_the_2_14_row_is_what_the_wheel_declares():
    meta = _wheel_text("torch_npu-2.14.0.dist-info/METADATA")
    row = next(r for r in compat_table().releases if str(r.torch_npu) == "2.14.0")
    assert f"Requires-Dist: torch=={row.torch}.*" in meta
    assert f"Install CANN {row.cann} " in meta
    entry_points = _wheel_text("torch_npu-2.14.0.dist-info/entry_points.txt")
    assert "[torch.backends]\ntorch_npu = torch_npu:_autoload" in entry_points


@pytest.mark.parametrize(
    "key,path",
    [
        ("two-accelerators", "torch_npu/__init__.py"),
        ("cann-too-old", "torch_npu/lib/libtorch_npu.so"),
        ("npu-out-of-memory", "torch_npu/lib/libtorch_npu.so"),
        ("async-error-location", "torch_npu/lib/libtorch_npu.so"),
        ("ascend-home-not-set", "torch_npu/_init/registry/registry_manager.py"),
    ],
)
def test_message_rows_match_the_messages_torch_npu_prints(key, path):
    entry = error_table().message(key)
    assert path in {s.path for s in entry.sources}
    text = _wheel_text(path)
    literal = re.split(r"[\\\[(+*?]", entry.pattern.pattern)[0]
    assert literal and literal in text, (key, literal)


def test_torch_npu_code_kinds_are_the_wheels():
    text = _wheel_text("torch_npu/utils/_error_code.py")
    table = error_table().torch_npu
    declared = {int(n): m for n, m in re.findall(r"= \((\d+), \"([^\"]+)\"\)", text)}
    declared[999] = declared[999].replace("applicaiton", "application")  # (sic) in torch_npu
    assert {k: v[0] for k, v in table.kinds.items()} == {k: v for k, v in declared.items() if k != 0}
    subs = dict(re.findall(r"\n    ([A-Z]+) = (\d+)", text))
    assert {v[0]: str(k) for k, v in table.submodules.items()} == subs


# -- the NPU floors are the scan's rows -----------------------------------------------------------


def test_floors_are_the_scan_rule_rows_not_a_copy():
    rows = {r.code: r for r in default_rules()}["MIG752"].params["versions"]
    assert {k: v[0] for k, v in npu_floors().items()} == {k.lower(): v for k, v in rows.items()}
    assert not list(TABLES.glob("*floor*"))


# -- versions -------------------------------------------------------------------------------------


def test_cann_versions_sort_like_releases():
    order = [
        "7.0.RC1",
        "7.0.0",
        "8.0.RC1",
        "8.0.RC2.alpha003",
        "8.0.RC2",
        "8.0.RC3",
        "8.0.0",
        "8.1.RC1",
        "8.3.RC1",
        "8.5.0",
        "9.0.0-beta.1",
        "9.0.0",
        "9.1.0",
        "CANN 9.2.0",
    ]
    parsed = [parse_cann(v) for v in order]
    assert all(parsed) and parsed == sorted(parsed)
    assert parse_cann("8.3.T5.0.B028") is None and parse_cann("") is None
    assert parse_cann("8.3.RC1.alpha001").release == parse_cann("8.3.RC1").release


def test_driver_and_firmware_ranges():
    assert numeric("24.1.rc2") == (24, 1, 2)
    assert in_range("7.1.0.11.220", "7.0.0", "7.2.99") is True
    assert in_range("7.8.0.5.216", "7.0.0", "7.2.99") is False
    assert in_range("junk", "7.0.0", "7.2.99") is None
