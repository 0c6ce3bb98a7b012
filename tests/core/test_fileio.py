"""core/fileio: how a file's bytes become text."""

from __future__ import annotations

import codecs
import io
import tokenize

import pytest

from migrate.core.fileio import SourceError, decode, detect_encoding

HEADS = [
    b"import torch\n",
    b"# -*- coding: latin-1 -*-\nx = '\xe9'\n",
    b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nx = 1\n",
    b"\n# coding: utf-8\n",
    b"x = 1\n# coding: latin-1\n",  # a cookie after code does not count
    b"# decoding: nothing\nx = 1\n",
    b"\xc3\x28 not utf-8 on line one\n",
    b"x = 1\n\xff on line two\n",
    b"# first\n\xff on line two\n",
    codecs.BOM_UTF8 + b"# coding: latin-1\n",
    codecs.BOM_UTF8 + b"x = 1\n",
    b"no newline at all",
    b"",
]


def _tokenize(data: bytes) -> str | None:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        return None
    return encoding if encoding == "utf-8-sig" else codecs.lookup(encoding).name


@pytest.mark.parametrize("data", HEADS)
def test_python_encodings_are_the_ones_tokenize_detects(data):
    """The no-cookie shortcut answers what tokenize answers, and fails where it fails."""
    expected = _tokenize(data)
    if expected is None:
        with pytest.raises(SourceError, match="bad encoding declaration"):
            detect_encoding(data, python=True)
    else:
        assert detect_encoding(data, python=True)[0] == expected


def test_a_latin1_cookie_decodes_the_file():
    assert decode(HEADS[1], python=True).text.endswith("x = 'é'\n")
