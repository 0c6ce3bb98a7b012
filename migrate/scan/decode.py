"""Bytes -> text for scanning: the codec rules of fileio (PEP 263, BOM), plus a binary check."""

from __future__ import annotations

from migrate.core.fileio import SourceError, detect_encoding


class DecodeError(Exception):
    pass


def decode_source(data: bytes, python: bool = True) -> str:
    """Decode a file's bytes exactly (CRLF stays CRLF); raise DecodeError on binary data."""
    if b"\x00" in data:
        raise DecodeError("binary data (NUL bytes); not a text file")
    try:
        encoding = detect_encoding(data, python)
    except SourceError as exc:
        raise DecodeError(f"bad encoding declaration: {exc}") from None
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise DecodeError(f"cannot decode as {encoding}: {exc}") from None
