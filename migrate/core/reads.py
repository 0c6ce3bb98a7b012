"""What this process reads while a run is recorded: the files it opens (or hands to worker
processes) and the folders it lists or looks into for a name.

``start()`` begins a recording, ``stop()`` ends it and returns ``(files, folders)`` as
absolute paths; ``file(path)`` and ``folder(path)`` note a read, and cost nothing when no
recording runs. The places that read on a run's behalf note here (core/fileio, the walker,
project discovery, the engine for the files its workers read): a recorded run knows what
its result depends on (migrate/scan/run_memo.py). Standard library only.
"""

from __future__ import annotations

import os

_files: set[str] | None = None
_folders: set[str] | None = None


def start() -> None:
    global _files, _folders
    _files, _folders = set(), set()


def stop() -> tuple[set[str], set[str]]:
    global _files, _folders
    out = (_files or set(), _folders or set())
    _files = _folders = None
    return out


def file(path: str | os.PathLike) -> None:
    if _files is not None:
        _files.add(os.path.abspath(path))


def folder(path: str | os.PathLike) -> None:
    if _folders is not None:
        _folders.add(os.path.abspath(path))
