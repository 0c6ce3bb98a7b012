"""Read and write source files without losing a byte we did not mean to change.

A file is read as bytes and decoded without newline translation, so CRLF stays in the
text (and character offsets from ``ast`` match the text). Writing re-encodes with the
same codec (a BOM comes back through ``utf-8-sig``), goes through a temporary file in the
same folder and an atomic ``os.replace``, and keeps the file mode. An interrupted run
leaves either the old file or the new one, never half of one.
"""

from __future__ import annotations

import codecs
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path


class SourceError(Exception):
    """A file that cannot be read, decoded or encoded; reported, never raised to the user."""


@dataclass
class SourceFile:
    path: Path
    text: str
    encoding: str  # codec used to decode; "utf-8-sig" when the file starts with a BOM
    raw: bytes

    @property
    def bom(self) -> bool:
        return self.encoding == "utf-8-sig"

    @property
    def newline(self) -> str:
        return newline_of(self.text)


def newline_of(text: str) -> str:
    """The file's newline convention: that of its first line break ("\\n" if none)."""
    pos = text.find("\n")
    if pos > 0 and text[pos - 1] == "\r":
        return "\r\n"
    return "\n"


def detect_encoding(data: bytes, python: bool) -> str:
    """PEP 263 / BOM detection for Python; BOM or UTF-8 for other text files."""
    if python:
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:  # unknown codec or BOM/cookie conflict
            raise SourceError(str(exc)) from exc
        return codecs.lookup(encoding).name if encoding != "utf-8-sig" else encoding
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    return "utf-8"


def read_source(path: Path, python: bool | None = None) -> SourceFile:
    """Read ``path``; ``python`` defaults to "ends with .py/.pyi"."""
    if python is None:
        python = path.suffix in (".py", ".pyi")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from exc
    encoding = detect_encoding(data, python)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise SourceError(f"cannot decode as {encoding}: {exc.reason}") from exc
    return SourceFile(path, text, encoding, data)


def encode_text(source: SourceFile, text: str) -> bytes:
    try:
        return text.encode(source.encoding)
    except UnicodeEncodeError as exc:
        raise SourceError(f"new text cannot be encoded as {source.encoding}") from exc


def write_source(source: SourceFile, text: str) -> bool:
    """Write ``text`` back with the file's encoding; return False if the bytes are unchanged."""
    data = encode_text(source, text)
    if data == source.raw:
        return False
    atomic_write(source.path, data)
    return True


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` via a temporary file in the same folder."""
    target = Path(os.path.realpath(path))  # write through symlinks, keep the link
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except OSError:
        mode = None
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".migrate")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
