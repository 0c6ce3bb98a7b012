"""Chrome-trace JSON read as a stream: one event at a time, memory bounded by the largest
event, never by the file.

A trace is either an array of events (Ascend ``trace_view.json``) or an object whose
``traceEvents`` member is that array (Kineto ``*.pt.trace.json``, with ``deviceProperties``
and ``distributedInfo`` beside it). :func:`items` yields ``("meta", (key, value))`` for the
object's other members, in file order, and ``("event", dict)`` for each event. Gzip is
recognised by its magic bytes, whatever the name. Each value is decoded by the standard
library's C decoder (``raw_decode``) straight from the read buffer, so a 1 GB trace costs
about what ``json.load`` costs in time and a few MB in memory.

Untrusted input: only regular files are opened (non-blocking, so a FIFO never hangs), the
bytes read (after decompression too, and a gzip'd file to ``MAX_RATIO`` times its size) are
capped, an event larger than ``MAX_VALUE_CHARS``
or nested deeper than the decoder allows, and a file cut short, are :class:`TraceError`
naming the byte offset. Non-object entries of the event array are skipped and counted.
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
import os
import re
import stat
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from migrate.core import reads

__all__ = ["MAX_FILE_BYTES", "TraceError", "items", "load_json", "open_bounded"]

MAX_FILE_BYTES = 64 << 30  # 64 GiB of JSON (decompressed) per file
MAX_RATIO = 200  # a gzip'd file inflates to at most this many times its size (+ 16 MiB)
MAX_VALUE_CHARS = 64 << 20  # one event or one metadata value
CHUNK = 4 << 20
_SKIP = re.compile(r"[\s,]*")
_WS = re.compile(r"\s*")
_DECODER = json.JSONDecoder()
Progress = Callable[[int], None]  # bytes of the file consumed so far


class TraceError(ValueError):
    """The file is not a readable trace: the message says where and why (one line)."""


class _Bounded(io.RawIOBase):
    """A binary stream that refuses to yield more than ``limit`` bytes."""

    def __init__(
        self, raw: BinaryIO, limit: int, message: str = "more than {limit} bytes (the limit for one file)"
    ) -> None:
        super().__init__()
        self.raw, self.limit, self.count, self.message = raw, limit, 0, message

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size if size is not None and size >= 0 else CHUNK)
        self.count += len(data)
        if self.count > self.limit:
            raise TraceError(self.message.format(limit=self.limit))
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def open_bounded(path: str | os.PathLike, limit: int | None = None) -> tuple[BinaryIO, BinaryIO]:
    """(file, stream): the regular file ``path`` opened without blocking, and a stream of
    its (decompressed) bytes capped at ``limit`` (default MAX_FILE_BYTES). TraceError for
    anything else."""
    limit = MAX_FILE_BYTES if limit is None else limit
    reads.file(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TraceError("not a regular file (a folder, FIFO, device or socket)")
        if st.st_size > limit:
            raise TraceError(f"too large ({st.st_size} bytes, limit {limit})")
        os.set_blocking(fd, True)
        raw = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    head = raw.peek(2)[:2]
    if head != b"\x1f\x8b":
        return raw, _Bounded(raw, limit)  # type: ignore[return-value]
    # gzip: at most MAX_RATIO times the file's size (Kineto traces compress 10-30x; a file
    # that inflates more is a gzip bomb, refused before it costs minutes to stream)
    inflated = min(limit, st.st_size * MAX_RATIO + (16 << 20))
    stream: Any = gzip.GzipFile(fileobj=raw, mode="rb")
    bomb = "more than {limit} bytes after decompression (the limit for this gzip file: a gzip bomb?)"
    return raw, _Bounded(stream, inflated, bomb)  # type: ignore[return-value]


class _Text:
    """Decoded text of the stream in a sliding buffer; ``pos`` indexes ``buf``."""

    def __init__(self, raw: BinaryIO, stream: BinaryIO, progress: Progress | None) -> None:
        self.raw, self.stream, self.progress = raw, stream, progress
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
        self.buf, self.pos, self.base, self.eof = "", 0, 0, False

    @property
    def offset(self) -> int:
        """Characters consumed since the start (for messages)."""
        return self.base + self.pos

    def more(self) -> bool:
        """Append the next chunk (dropping what was consumed); False at the end."""
        if self.eof:
            return False
        try:
            data = self.stream.read(CHUNK)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError(f"cannot read at character {self.offset}: {exc}") from None
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError:
            raise TraceError(f"not UTF-8 text near character {self.offset}") from None
        self.eof = not data
        self.base += self.pos
        self.buf, self.pos = self.buf[self.pos :] + text, 0
        if self.progress is not None:
            try:
                self.progress(self.raw.tell())
            except (OSError, ValueError):
                pass
        return bool(text) or not self.eof

    def skip(self, pattern: re.Pattern[str]) -> str:
        """Skip what ``pattern`` matches (across chunks); the next character, or ""."""
        while True:
            m = pattern.match(self.buf, self.pos)
            self.pos = m.end() if m else self.pos
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def value(self) -> Any:
        """Decode one JSON value at ``pos``, reading more while it is incomplete."""
        self.skip(_WS)
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                # a value cut by the chunk's end fails near the end (a \uXXXX escape cut in
                # two fails at its backslash), or as a string left open: read on and retry
                left_open = exc.msg.startswith("Unterminated string")
                at_end, where = exc.pos >= len(self.buf) - 1, self.base + exc.pos
                if (left_open or exc.pos >= len(self.buf) - 8) and self._grow():
                    continue
                if self.eof and (left_open or at_end):
                    raise TraceError(
                        f"cut short at character {where} (the JSON ends inside a value)"
                    ) from None
                raise TraceError(f"malformed JSON at character {where}: {exc.msg}") from None
            except RecursionError:
                raise TraceError(f"a value nested too deeply at character {self.offset}") from None
            except ValueError as exc:  # an integer of too many digits
                raise TraceError(f"bad number at character {self.offset}: {exc}") from None
            if end == len(self.buf) and not self.eof and self._grow():
                continue  # a number may go on in the next chunk
            self.pos = end
            return value

    def _grow(self) -> bool:
        if len(self.buf) - self.pos > MAX_VALUE_CHARS:
            raise TraceError(f"a value of more than {MAX_VALUE_CHARS} characters at character {self.offset}")
        return self.more()

    def expect(self, char: str, where: str) -> None:
        got = self.skip(_WS)
        if got != char:
            shown = repr(got) if got else "the end of the file"
            raise TraceError(f"expected {char!r} {where} at character {self.offset}, found {shown}")
        self.pos += 1


def _whole_events(text: _Text, counts: dict[str, int]) -> Iterator[tuple[str, Any]]:
    """The events that lie whole in the buffer, decoded without per-event bookkeeping (the
    hot loop); stops before the last one, an error or the array's end, for the careful
    path to take over at ``text.pos``."""
    buf, pos = text.buf, text.pos
    last = len(buf) - 1
    scan, match = _DECODER.scan_once, _SKIP.match  # type: ignore[attr-defined]
    while True:
        pos = match(buf, pos).end()  # type: ignore[union-attr]
        if pos >= last or buf[pos] == "]":
            break
        try:
            value, end = scan(buf, pos)
        except (StopIteration, ValueError, RecursionError):
            break
        if end >= last:
            break
        pos = end
        if type(value) is dict:
            yield "event", value
        else:
            counts["skipped"] = counts.get("skipped", 0) + 1
    text.pos = pos


def _array(text: _Text, counts: dict[str, int]) -> Iterator[tuple[str, Any]]:
    text.expect("[", "to open the event array")
    while True:
        yield from _whole_events(text, counts)
        char = text.skip(_SKIP)
        if char == "]":
            text.pos += 1
            return
        if not char:
            raise TraceError(f"cut short at character {text.offset} (the event array is not closed)")
        event = text.value()
        if isinstance(event, dict):
            yield "event", event
        else:
            counts["skipped"] = counts.get("skipped", 0) + 1


def _object(text: _Text, counts: dict[str, int]) -> Iterator[tuple[str, Any]]:
    text.expect("{", "to open the trace")
    while True:
        char = text.skip(_SKIP)
        if char == "}":
            return
        if char != '"':
            shown = repr(char) if char else "the end of the file"
            raise TraceError(f"expected a member name at character {text.offset}, found {shown}")
        key = text.value()
        text.expect(":", f"after member {key!r}")
        if key == "traceEvents":
            yield from _array(text, counts)
        else:
            yield "meta", (key, text.value())


def items(
    path: str | os.PathLike, progress: Progress | None = None, counts: dict[str, int] | None = None
) -> Iterator[tuple[str, Any]]:
    """``("meta", (key, value))`` and ``("event", dict)`` items of the trace at ``path``."""
    raw, stream = open_bounded(path)
    counts = {} if counts is None else counts
    try:
        text = _Text(raw, stream, progress)
        first = text.skip(_WS)
        if first == "[":
            yield from _array(text, counts)
        elif first == "{":
            yield from _object(text, counts)
        else:
            shown = repr(first) if first else "an empty file"
            raise TraceError(f"not a JSON trace (starts with {shown})")
    finally:
        raw.close()


def size_of(path: str | os.PathLike) -> int:
    """The file's size on disk (for progress), 0 if it cannot be read."""
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


MAX_DOCUMENT_BYTES = 256 << 20  # a JSON document read whole (communication.json and the like)


def load_json(path: str | os.PathLike, limit: int = MAX_DOCUMENT_BYTES) -> Any:
    """A JSON document (not a trace) read whole from the regular file ``path``, at most
    ``limit`` bytes after decompression (read in chunks, so a gzip bomb stops at the limit);
    TraceError (one line) for anything else. NaN and Infinity decode as floats: readers keep
    finite numbers only."""
    raw, stream = open_bounded(path, limit)
    parts: list[bytes] = []
    try:
        while chunk := stream.read(CHUNK):
            parts.append(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceError(f"cannot read: {exc}") from None
    finally:
        raw.close()
    try:
        return json.loads(b"".join(parts).decode("utf-8"))
    except UnicodeDecodeError:
        raise TraceError("not UTF-8 text") from None
    except RecursionError:
        raise TraceError("not JSON: nested too deeply") from None
    except ValueError as exc:
        raise TraceError(f"not JSON: {str(exc).splitlines()[0][:120]}") from None
