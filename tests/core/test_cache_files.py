"""core/cache_files.py: every cache file (scan cache, package facts, run memo) is read by one
set of rules: bounded, strict JSON, its format checked, a corrupt file ignored with a note."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from migrate.core.cache_files import read_cache_doc


def test_a_cache_of_this_format_is_read(tmp_path: Path, capsys) -> None:
    path = tmp_path / "c.json"
    path.write_text('{"format": 3, "entries": {"a": 1.5}}')
    assert read_cache_doc(path, 3, 1000) == {"format": 3, "entries": {"a": 1.5}}
    assert capsys.readouterr().err == ""


def test_missing_or_another_format_is_not_used_quietly(tmp_path: Path, capsys) -> None:
    path = tmp_path / "c.json"
    assert read_cache_doc(path, 3, 1000) is None
    path.write_text('{"format": 2, "entries": {}}')  # an older tool's
    assert read_cache_doc(path, 3, 1000) is None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "kind, why",
    [
        ("nan", "not JSON (ValueError)"),
        ("infinity", "not JSON (ValueError)"),
        ("truncated", "not JSON (JSONDecodeError)"),
        ("binary", "not JSON (UnicodeDecodeError)"),
        ("nested", "not JSON (RecursionError)"),
        ("list", "not a JSON object"),
        ("large", "larger than 1000 bytes"),
        ("folder", "not a regular file"),
        ("symlink", "cannot be opened"),
    ],
)
def test_a_corrupt_cache_is_ignored_with_a_note(tmp_path: Path, capsys, kind: str, why: str) -> None:
    path = tmp_path / "c.json"
    if kind == "nan":
        path.write_text('{"format": 3, "x": NaN}')
    elif kind == "infinity":
        path.write_text('{"format": 3, "x": -Infinity}')
    elif kind == "truncated":
        path.write_text('{"format": 3, "entr')
    elif kind == "binary":
        path.write_bytes(b'{"format": 3, "x": "\xff"}')
    elif kind == "nested":
        path.write_text("[" * 100_000 + "]" * 100_000)  # within the size limit below
    elif kind == "list":
        path.write_text("[1, 2]")
    elif kind == "large":
        path.write_text('{"format": 3, "x": "' + "a" * 1000 + '"}')
    elif kind == "folder":
        path.mkdir()
    else:
        (tmp_path / "real.json").write_text('{"format": 3}')
        os.symlink(tmp_path / "real.json", path)
    limit = 300_000 if kind == "nested" else 1000
    assert read_cache_doc(path, 3, limit) is None
    err = capsys.readouterr().err
    assert err.startswith(f"migrate: note: cache file {path}: {why}") and err.endswith("; ignored\n"), err
