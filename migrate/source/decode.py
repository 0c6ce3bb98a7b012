"""Bytes -> text for source files: PEP 263 cookies, BOMs, no newline translation."""

from __future__ import annotations

import io
import tokenize


class DecodeError(Exception):
    pass


def decode_source(data: bytes, python: bool = True) -> str:
    """Decode a file's bytes exactly (CRLF stays CRLF); raise DecodeError on binary data."""
    if b"\x00" in data:
        raise DecodeError("binary data (NUL bytes); not a text file")
    encoding = "utf-8"
    if python:
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:
            raise DecodeError(f"bad encoding declaration: {exc}") from None
    elif data.startswith(b"\xef\xbb\xbf"):
        encoding = "utf-8-sig"
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise DecodeError(f"cannot decode as {encoding}: {exc}") from None
