"""Text that is safe to print: file names and messages from a scanned repository.

A name may hold control characters (``x\\n::warning file=evil.py::injected\\n.py`` would
print a bare GitHub workflow command), ANSI escapes, bidi overrides or bytes that are not
UTF-8 (decoded by Python as lone surrogates, which no UTF-8 stream can write). ``escape``
shows each of them as a Python-style escape (``\\n``, ``\\x1b``, ``\\udcff``) and leaves
everything else as it is; tabs are kept.
"""

from __future__ import annotations

import html
import re

_UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _one(m: re.Match) -> str:
    ch = m.group()
    if ch == "\n":
        return "\\n"
    if ch == "\r":
        return "\\r"
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str) -> str:
    """``text`` with control, line-separator, bidi and surrogate characters escaped."""
    return _UNSAFE.sub(_one, text) if _UNSAFE.search(text) else text


def shown_path(rel: str, root=None) -> str:
    """A reported path as ruff prints it: relative to the current directory when the file
    lies under it (so `git apply` takes a --diff made from anywhere inside the project),
    else relative to the scan root, as the JSON and SARIF reports give it."""
    import os
    from pathlib import Path

    if root is None or os.path.isabs(rel):
        return rel
    full = os.path.normpath(os.path.join(os.path.abspath(root), rel))
    here = os.path.abspath(os.getcwd())
    if full == here or not full.startswith(here.rstrip(os.sep) + os.sep):
        return rel
    return Path(os.path.relpath(full, here)).as_posix()


_UNSAFE_IN_LINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def escape_lines(text: str) -> str:
    """A multi-line report with the same escapes as ``escape`` but its line breaks (and
    tabs) kept: names from a dump cannot move the cursor, clear a terminal or break lines."""
    return _UNSAFE_IN_LINES.sub(_one, text) if _UNSAFE_IN_LINES.search(text) else text


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold (control characters, lone
    surrogates, U+FFFE/FFFF) written as Python-style escapes."""
    return _NOT_XML.sub(_one, text) if _NOT_XML.search(text) else text


def escape_strings(value):
    """A copy of ``value`` (dicts, lists, tuples of anything) with every string escaped:
    data from a file (layer names, op types) rendered into a line-based report cannot start
    a line of its own."""
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, dict):
        return {escape_strings(k): escape_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(escape_strings(v) for v in value)
    return value


def md_text(text: str) -> str:
    """Text safe in a line of Markdown: its HTML (``<script>``, ``<img onerror=...>``,
    entities) shown as text, not rendered; control characters escaped."""
    return escape(html.escape(text, quote=False))


def md_cell(text: str) -> str:
    """Text safe inside a Markdown table cell: no pipes, no raw HTML, one line, escaped."""
    return md_text(text.replace("|", "\\|").replace("\r", " ").replace("\n", " "))
