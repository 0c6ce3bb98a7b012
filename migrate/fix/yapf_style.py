"""Wrap a port's long lines as yapf wraps them, in a project that formats with yapf.

A project whose nearest style file is yapf's (``.style.yapf``, ``[tool.yapf]`` in
pyproject.toml, ``[yapf]`` in setup.cfg: yapf's own order, folder by folder up from the
file) has its lines wrapped by yapf with that style: mmengine's and ms-swift's engineers
ran it on their NPU changes (``if vllm_device.split(':')[0] in {'cuda', 'npu'\n}``), so
the port's wrap is the one their pre-commit hook would write. Only the lines the port made
too long are given to yapf (its ``lines=`` ranges); the rest stays as written. Without
yapf installed, or where yapf fails on the file, the caller wraps as ruff does.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_STYLE_FILES = (  # (file name, what marks it as yapf's): yapf's order within a folder
    (".style.yapf", None),
    ("pyproject.toml", re.compile(r"^\s*\[tool\.yapf\]", re.MULTILINE)),
    ("setup.cfg", re.compile(r"^\s*\[yapf\]", re.MULTILINE)),
)


def yapf_style(path: Path, read) -> str | None:
    """The yapf style file that governs ``path`` (``read``: a bounded reader giving a
    file's text or None), or None where none does or yapf is not installed."""
    try:
        import yapf  # noqa: F401
    except ImportError:
        return None
    folder = Path(os.path.abspath(path)).parent
    for cur in (folder, *folder.parents):
        for name, mark in _STYLE_FILES:
            text = read(cur / name)
            if text is not None and (mark is None or mark.search(text)):
                return str(cur / name)
    return None


def wrap_with_yapf(style: str, text: str, lines: list[int], keep_change) -> str | None:
    """``text`` with each of ``lines`` (1-based) reformatted by yapf in ``style``, bottom
    up, only the change at that line kept (``keep_change(text, wrapped, index)``); None
    where yapf fails."""
    try:
        from yapf.yapflib.yapf_api import FormatCode
    except ImportError:
        return None
    for line in sorted(lines, reverse=True):
        try:
            wrapped, _ = FormatCode(text, style_config=style, lines=[(line, line)])
        except Exception:  # yapf's parser or style errors: the caller's wrap instead
            return None
        text = keep_change(text, wrapped, line - 1)
    return text
