"""``migrate doctor --log FILE``: codes and known messages in logs, read as a stream.

A log is read as a stream of at most ``limit`` bytes (regular files, or ``-`` for stdin),
4 MiB at a time; a regular file is read up to its size when the scan started (a log still
being written is not followed). Only the text around a trigger (a literal every finding
holds, found by fast substring search) is matched exactly, 1 KiB either side in a long line.
A line longer than a read is read in pieces that overlap by 2 KiB: a trigger is matched in
the one piece that holds its whole window, so a code cut by a read's edge is found once and
a piece's edge never makes a code of a longer token. Each finding is reported once per file,
with its first line, that line's text and the number of lines holding it; at most 500
distinct findings are kept. Nothing read is executed or written.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import IO, Any

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.doctor.explain import SHOWN, Finding, acl_names, find_in_line, longest_literal
from migrate.doctor.tables import ErrorTable, error_table

LOG_LIMIT = 2 << 30  # bytes scanned per log (then: truncated)

CHUNK = 4 << 20  # bytes read at a time
WINDOW = 1024  # characters either side of a trigger looked at in a long line
MAX_FINDINGS = 500  # distinct findings kept per scan (then counted in ``dropped``)
CACHED_WINDOWS = 4096  # distinct short lines whose findings are remembered
# Literals (or literal-led regexes) every finding's text holds: found with fast substring
# search, so most of a log is never looked at by the per-line patterns.
_TRIGGER_RES = (
    re.compile(r"E[0-9A-Z]\d{4}"),
    re.compile(r"ERR\d{5}"),
    re.compile(r"ret(?:code)?\s*[=:]"),
    re.compile(r"result\s*="),
)
_TRIGGER_WORDS = ("error code", "failed:", "aclError", "error_code", "ACL_ERROR_")


@dataclass
class LogScan:
    paths: list[str]
    findings: list[Finding] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    truncated: bool = False
    dropped: int = 0  # lines holding findings beyond MAX_FINDINGS distinct ones
    errors: list[dict[str, str]] = field(default_factory=list)  # files that could not be read


def open_log(path: str) -> IO[bytes]:
    """A binary stream of a regular file (or stdin for ``-``); UsageError for anything else."""
    if path == "-":
        return sys.stdin.buffer
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"{escape(path)}: cannot read: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(
                f"{escape(path)}: not a regular file (a folder, FIFO, device or "
                "socket); give a log file or - for stdin"
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def scan_logs(paths: Iterable[str], table: ErrorTable | None = None, limit: int = LOG_LIMIT) -> LogScan:
    """Every code and known message in the logs, each once per file (its first line, and the
    number of lines holding it)."""
    table = table or error_table()
    scanner = _Scanner(table)
    result = LogScan([str(p) for p in paths])
    streams: list[IO[bytes]] = []
    try:
        for path in result.paths:  # every path is checked before any is read
            streams.append(open_log(path))
        for path, stream in zip(result.paths, streams):
            try:
                scanner.scan(stream, path, result, limit)
            except OSError as exc:
                result.errors.append({"path": path, "message": exc.strerror or str(exc)})
    finally:
        for stream in streams:
            if stream is not sys.stdin.buffer:
                stream.close()
    result.findings = sorted(scanner.found.values(), key=lambda f: (result.paths.index(f.path), f.line))
    return result


class _Scanner:
    """Streams a log in chunks; only the text around a trigger is matched exactly."""

    def __init__(self, table: ErrorTable) -> None:
        self.table = table
        self.names = acl_names(table)
        self.words = trigger_words(table)
        self.found: dict[tuple[str, str], Finding] = {}
        self.line: tuple[str, int] = ("", 0)  # the line whose findings line_keys holds
        self.line_keys: set[str] = set()
        self.cache: dict[str, list[Finding]] = {}

    def scan(self, stream: IO[bytes], path: str, result: LogScan, limit: int) -> None:
        """Read ``stream`` up to ``limit`` bytes, or a regular file's size at the start,
        whichever is less: a log still being written is not followed. A line longer than a
        read is matched in pieces overlapping by ``2 * WINDOW`` characters (``_block``'s
        ``low``/``tail``), so every trigger's whole window is in one piece."""
        size = _size_now(stream)
        stop = limit if size is None else min(limit, size)
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        line, carry, scanned, text, done = 1, "", 0, "", 0
        while True:
            want = min(CHUNK, stop - scanned)
            raw = stream.read(want) if want > 0 else b""
            scanned += len(raw)
            text = carry + decoder.decode(raw, final=not raw)
            if not raw or scanned >= stop:
                self._block(text, path, line, result, low=done)
                line += text.count("\n")
                result.truncated |= bool(raw) and scanned >= limit and _more(stream)
                break
            cut = text.rfind("\n")
            if cut < 0 and len(text) < CHUNK:
                carry = text  # part of a line: wait for its end
                continue
            if cut < 0:  # a piece of a long line: the next piece starts 2 windows back
                self._block(text, path, line, result, low=done, tail=True)
                carry = text[-2 * WINDOW :]
                done = max(0, max(done, len(text) - WINDOW) - (len(text) - len(carry)))
                continue
            block, carry = text[: cut + 1], text[cut + 1 :]
            self._block(block, path, line, result, low=done)
            line += block.count("\n")
            done = 0
        ends_open = bool(text) and not text.endswith("\n")
        result.lines += line - 1 + (1 if ends_open else 0)
        result.bytes += scanned

    def _block(
        self, block: str, path: str, first_line: int, result: LogScan, low: int = 0, tail: bool = False
    ) -> None:
        """Each line with triggers is matched once, over the union of the windows around
        its triggers (a long line holding a million codes is read once, not once per code);
        a line seen before (logs repeat) reuses its findings. A block may start inside a
        line, with the end of the piece before it, whose triggers before ``low`` were
        matched there; ``tail``: it ends inside a line, and a trigger within a window of
        that end is matched in the next piece, where its whole window is (a cut token
        would read as another one: ``ret=5070151`` cut after ``507015``)."""
        line_no, counted_to = first_line, 0
        high = len(block) - (WINDOW if tail else 0)
        triggers = sorted({t for t in self._triggers(block) if low <= t < high})
        i = 0
        while i < len(triggers):
            pos = triggers[i]
            start = block.rfind("\n", 0, pos) + 1
            end = block.find("\n", pos)
            end = len(block) if end < 0 else end
            line_no += block.count("\n", counted_to, start)
            counted_to = start
            spans: list[list[int]] = []
            while i < len(triggers) and triggers[i] < end:
                lo, hi = max(start, triggers[i] - WINDOW), min(end, triggers[i] + WINDOW)
                if spans and lo <= spans[-1][1]:
                    spans[-1][1] = max(spans[-1][1], hi)
                else:
                    spans.append([lo, hi])
                i += 1
            shown = (block, start, end, pos)
            if (path, line_no) != self.line:
                self.line, self.line_keys = (path, line_no), set()
            for lo, hi in spans:
                for f in self._find(block[lo:hi]):
                    self._record(f, path, line_no, shown, result)

    def _find(self, window: str) -> list[Finding]:
        """``find_in_line``, remembered for the last few thousand distinct windows."""
        found = self.cache.get(window)
        if found is None:
            found = find_in_line(window, self.table, self.names)
            if len(self.cache) >= CACHED_WINDOWS:
                self.cache.clear()
            if len(window) <= SHOWN * 4:
                self.cache[window] = found
        return found

    def _triggers(self, block: str) -> Iterator[int]:
        for word in self.words:
            pos = block.find(word)
            while pos >= 0:
                yield pos
                pos = block.find(word, pos + 1)
        for pattern in _TRIGGER_RES:
            for m in pattern.finditer(block):
                yield m.start()

    def _record(
        self, f: Finding, path: str, line: int, shown: tuple[str, int, int, int], result: LogScan
    ) -> None:
        if f.key in self.line_keys:
            return  # once per line (a line longer than a read is met in two blocks)
        self.line_keys.add(f.key)
        key = (f.key, path)
        if key in self.found:
            self.found[key].count += 1
        elif len(self.found) >= MAX_FINDINGS:
            result.dropped += 1
        else:
            self.found[key] = replace(f, line=line, path=path, text=_shown(f.key, *shown))


def _shown(key: str, block: str, start: int, end: int, first: int) -> str:
    """The line holding ``key``; of a long line, the part around the code (or around the
    line's first trigger, for a message)."""
    if end - start > SHOWN * 4:
        at = block.find(key, start, end)
        at = first if at < 0 else at
        start, end = max(start, at - SHOWN // 2), min(end, at + SHOWN // 2)
    return block[start:end].strip()[:SHOWN]


def _size_now(stream: IO[bytes]) -> int | None:
    """Bytes left in a regular file now (None for a pipe or a terminal)."""
    try:
        fd = stream.fileno()
        st = os.fstat(fd)
        return max(0, st.st_size - os.lseek(fd, 0, os.SEEK_CUR)) if stat.S_ISREG(st.st_mode) else None
    except (OSError, ValueError):
        return None


def _more(stream: IO[bytes]) -> bool:
    """Is there anything after the limit? (One more byte read, no more.)"""
    try:
        return bool(stream.read(1))
    except OSError:
        return False


def trigger_words(table: ErrorTable) -> tuple[str, ...]:
    """The literal each message pattern must contain (its longest literal run) and the fixed
    words of the ACL code contexts; a word holding another word is dropped."""
    words = set(_TRIGGER_WORDS)
    for msg in table.messages:
        assert msg.pattern is not None
        words.add(longest_literal(msg.pattern.pattern) or msg.pattern.pattern)
    return tuple(w for w in sorted(words) if not any(o != w and o in w for o in words))


def log_json(scan: LogScan) -> dict[str, Any]:
    return {
        "logs": scan.paths,
        "lines": scan.lines,
        "bytes": scan.bytes,
        "truncated": scan.truncated,
        "dropped": scan.dropped,
        "errors": scan.errors,
        "findings": [f.to_json() for f in scan.findings],
        "summary": {
            "findings": len(scan.findings),
            "known": sum(f.explanation is not None for f in scan.findings),
        },
    }
