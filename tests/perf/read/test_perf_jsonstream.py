"""The streaming trace reader: every value whatever the chunk boundaries, the object form
with members before and after the events, gzip by magic bytes, and one-line errors."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from migrate.perf.read import jsonstream
from migrate.perf.read.jsonstream import TraceError, items


def events_of(path) -> tuple[list, dict]:
    events, meta = [], {}
    for kind, value in items(path):
        if kind == "event":
            events.append(value)
        else:
            meta[value[0]] = value[1]
    return events, meta


SAMPLE = [
    {"ph": "X", "name": "aten::mm", "ts": "1704161511420306.491", "dur": 13.08, "args": {"s": "a,b]}"}},
    {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "Ascend Hardware \u00e9\u4e2d"}},
    {"ph": "X", "name": "k" * 300, "ts": 1.5e3, "dur": 0},
]


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 4096])
def test_events_survive_every_chunk_boundary(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(jsonstream, "CHUNK", chunk)
    path = tmp_path / "trace_view.json"
    path.write_text(json.dumps(SAMPLE, ensure_ascii=False, indent=1), encoding="utf-8")
    assert events_of(path) == (SAMPLE, {})


def test_a_kineto_object_gives_its_members_in_order_gzip_by_magic(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonstream, "CHUNK", 5)
    doc = {
        "schemaVersion": 1,
        "distributedInfo": {"rank": 3},
        "traceEvents": SAMPLE,
        "traceName": "x",
        "n": 12345,
    }
    path = tmp_path / "rank3.json"  # no .gz suffix: the magic bytes decide
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    events, meta = events_of(path)
    assert events == SAMPLE
    assert meta == {"schemaVersion": 1, "distributedInfo": {"rank": 3}, "traceName": "x", "n": 12345}


def test_non_object_entries_are_skipped_and_counted(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('[1, {"ph": "X"}, "x", null, [2]]')
    counts: dict = {}
    got = [v for _, v in items(path, counts=counts)]
    assert got == [{"ph": "X"}] and counts == {"skipped": 4}


@pytest.mark.parametrize(
    "text, says",
    [
        ('[{"ph": "X"}, {"ph": "X", "na', "cut short"),
        ('[{"ph": "X"}, {"ph": "X"}', "cut short"),
        ('{"traceEvents": [{"a": 1}', "cut short"),
        ('[{"ph": "X"}, {"ph" "X"}]', "malformed JSON"),
        ("", "empty file"),
        ("<html>", "not a JSON trace"),
        ('{"traceEvents" [1]}', "expected ':'"),
        ("[" + "[" * 100000 + "]" * 100000 + "]", "nested too deeply"),
        ('[{"n": ' + "9" * 5000 + "}]", "bad number"),
    ],
)
def test_bad_json_is_one_line_naming_where(tmp_path, text, says):
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(TraceError) as exc:
        list(items(path))
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_a_value_larger_than_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonstream, "MAX_VALUE_CHARS", 1000)
    monkeypatch.setattr(jsonstream, "CHUNK", 100)
    path = tmp_path / "t.json"
    path.write_text('[{"name": "' + "x" * 5000 + '"}]')
    with pytest.raises(TraceError, match="more than 1000 characters"):
        list(items(path))


def test_a_gzip_bomb_stops_at_the_byte_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonstream, "MAX_FILE_BYTES", 1 << 20)
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(b"[" + b" " * (8 << 20) + b"]"))
    assert path.stat().st_size < 64 << 10
    with pytest.raises(TraceError, match="limit"):
        list(items(path))


def test_a_cut_gzip_stream_is_an_error(tmp_path):
    path = tmp_path / "t.json.gz"
    data = gzip.compress(json.dumps({"traceEvents": SAMPLE * 50}).encode())
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError):
        list(items(path))


def test_only_regular_files_are_opened(tmp_path):
    fifo = tmp_path / "trace_view.json"
    os.mkfifo(fifo)
    with pytest.raises(TraceError, match="not a regular file"):
        list(items(fifo))  # never blocks waiting for a writer
    with pytest.raises(TraceError, match="not a regular file"):
        list(items(tmp_path))


def test_not_utf8_is_an_error(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(b'[{"name": "\xff\xfe"}]')
    with pytest.raises(TraceError, match="not UTF-8"):
        list(items(path))
