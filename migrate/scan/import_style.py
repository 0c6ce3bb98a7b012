"""How a package imports its own modules: relatively (``from .._device import x``) or
absolutely (``from pkg._device import x``), decided once per package by the style most of its
files use, so every file of a port spells the added helper's import the same way.

Read on demand (only when a port writes such an import), bounded as the project context
reads a package (migrate/scan/project.py), cached per package folder.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from migrate.scan.project import _package_files, _read

_RELATIVE = re.compile(rb"^[ \t]*from[ \t]+\.", re.MULTILINE)


@cache
def prefers_relative(package_dir: str) -> bool:
    """Do the package's files import the package relatively more often than absolutely?
    (A tie, a package that does neither: absolute, what PEP 8 recommends.)"""
    top = Path(package_dir)
    absolute = re.compile(
        rb"^[ \t]*(?:from|import)[ \t]+" + re.escape(top.name.encode()) + rb"\b", re.MULTILINE
    )
    relative = own = 0
    for path in _package_files(top):
        data = _read(Path(path))
        if data is None:
            continue
        relative += len(_RELATIVE.findall(data))
        own += len(absolute.findall(data))
    return relative > own
