"""Keep a ruff-formatted file ruff-formatted after a port.

A rewrite makes lines longer (``torch.cuda.empty_cache()`` becomes
``get_device_module().empty_cache()``); in a project whose files pass ``ruff format
--check``, a line past the project's limit would make that check fail after the port. So
when the original text passes the check (with the project's own configuration, found from
the file's path), the rewritten text is formatted the same way: only what the port changed
can move, because the rest was formatted already. A file that was not formatted, a project
that does not use ruff format (no ``[tool.ruff]``/``ruff.toml``), or a machine without ruff:
the text is left exactly as the port wrote it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

TIMEOUT = 30


@cache
def _ruff() -> list[str] | None:
    exe = shutil.which("ruff")
    if exe:
        return [exe]
    try:
        import ruff  # noqa: F401
    except ImportError:
        return None
    return [sys.executable, "-m", "ruff"]


def _uses_ruff(path: Path) -> bool:
    """Does a pyproject.toml (with [tool.ruff]), ruff.toml or .ruff.toml govern ``path``?"""
    folder = Path(os.path.abspath(path)).parent
    for cur in (folder, *folder.parents):
        if (cur / "ruff.toml").is_file() or (cur / ".ruff.toml").is_file():
            return True
        project = cur / "pyproject.toml"
        if project.is_file():
            try:
                return "[tool.ruff" in project.read_text(encoding="utf-8", errors="replace")
            except OSError:
                return False
    return False


def _format(cmd: list[str], path: Path, text: str, check: bool) -> str | None:
    path = Path(os.path.abspath(path))  # ruff finds the project's configuration from it
    args = [*cmd, "format", "--stdin-filename", str(path), "--quiet"]
    if check:
        args.insert(len(cmd) + 1, "--check")
    try:
        proc = subprocess.run([*args, "-"], input=text, capture_output=True, text=True,
                              timeout=TIMEOUT, cwd=path.parent)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return text if check else proc.stdout


def keep_formatted(path: Path, old_text: str, new_text: str) -> str:
    """``new_text``, formatted as ruff formats the project if ``old_text`` was."""
    if new_text == old_text or not str(path).endswith((".py", ".pyi")):
        return new_text
    cmd = _ruff()
    if cmd is None or not _uses_ruff(path):
        return new_text
    if _format(cmd, path, old_text, check=True) is None:
        return new_text  # not formatted before the port: not the port's business
    formatted = _format(cmd, path, new_text, check=False)
    return formatted if formatted else new_text
