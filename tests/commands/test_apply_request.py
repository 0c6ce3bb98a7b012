"""commands/apply.py: ApplyRequest carries each option by name into the scan apply runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from migrate.commands.apply import ApplyRequest
from migrate.scan.session import ScanRequest


def _distinct(field: dataclasses.Field, n: int):
    """A value for ``field`` no other field of the request holds."""
    kind = str(field.type)
    if kind.startswith("bool"):
        return True
    if "list[str]" in kind:
        return [f"MIG{n:03d}"]
    if "list[Path]" in kind:
        return [Path(f"p{n}")]
    if "Path" in kind:
        return Path(f"folder{n}")
    if kind.startswith("int"):
        return n + 2
    return f"value{n}"


def test_every_shared_option_reaches_the_scan_under_its_own_name() -> None:
    fields = dataclasses.fields(ApplyRequest)
    request = ApplyRequest(**{f.name: _distinct(f, i) for i, f in enumerate(fields)})
    scan = request.scan_request()
    shared = {f.name for f in dataclasses.fields(ScanRequest)} & {f.name for f in fields}
    assert {"paths", "select", "ignore", "exclude", "jobs", "cache_dir", "config", "target"} <= shared
    for name in shared:
        assert getattr(scan, name) == getattr(request, name), name
    # what apply always asks of its scan
    assert scan.verify_content and scan.strict_config
    assert scan.extend_select is None and scan.per_file_ignores is None


def test_each_shared_switch_sets_only_its_own() -> None:
    switches = [f.name for f in dataclasses.fields(ScanRequest) if f.type == "bool"]
    shared = [name for name in switches if name in {f.name for f in dataclasses.fields(ApplyRequest)}]
    assert {"no_cache", "follow_symlinks"} <= set(shared)
    for name in shared:
        scan = ApplyRequest([Path(".")], **{name: True}).scan_request()
        on = {s for s in switches if getattr(scan, s)}
        assert on == {name, "verify_content", "strict_config"}, name


def test_the_requests_are_frozen() -> None:
    request = ApplyRequest([Path(".")])
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.diff = True  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.scan_request().jobs = 3  # type: ignore[misc]
