"""Keep a port's lines within the file's own habits.

A rewrite makes lines longer (``torch.cuda.empty_cache()`` becomes
``get_device_module().empty_cache()``).

* In a project whose files pass ``ruff format --check`` (a ``[tool.ruff]``/``ruff.toml``
  governs the file, and the original text passes with it), the rewritten text is formatted
  the same way: only what the port changed can move, the rest was formatted already.
* Elsewhere, a line the port made longer than the file's longest line (79 at least) is
  wrapped as ruff format wraps it (``--range``: only the statements holding such lines,
  quotes as written), never anything else.

Without ruff (neither on PATH nor importable) the text stays exactly as the port wrote it.
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


def _format(cmd: list[str], path: Path, text: str, check: bool, extra: tuple[str, ...] = ()) -> str | None:
    path = Path(os.path.abspath(path))  # ruff finds the project's configuration from it
    args = [*cmd, "format", *extra, "--stdin-filename", str(path), "--quiet"]
    if check:
        args.insert(len(cmd) + 1, "--check")
    try:
        proc = subprocess.run(
            [*args, "-"], input=text, capture_output=True, text=True, timeout=TIMEOUT, cwd=path.parent
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return text if check else proc.stdout


def keep_formatted(path: Path, old_text: str, new_text: str) -> str:
    """``new_text``, formatted as ruff formats the project if ``old_text`` was; else with
    the lines the port made too long wrapped."""
    if new_text == old_text or not str(path).endswith((".py", ".pyi")):
        return new_text
    cmd = _ruff()
    if cmd is None:
        return new_text
    if _uses_ruff(path) and _format(cmd, path, old_text, check=True) is not None:
        formatted = _format(cmd, path, new_text, check=False)
        return formatted if formatted else new_text
    return _wrap_long(cmd, path, old_text, new_text)


def _wrap_long(cmd: list[str], path: Path, old_text: str, new_text: str) -> str:
    """Wrap the new lines longer than the file's longest old line, bottom up."""
    import difflib

    old, new = old_text.splitlines(), new_text.splitlines()
    limit = max([len(x) for x in old] + [79])
    long_lines = []
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "equal":
            long_lines += [
                j + 1 for j in range(j1, j2) if len(new[j]) > limit and not new[j].lstrip().startswith("#")
            ]
    text = new_text
    for line in sorted(long_lines, reverse=True):
        extra = (
            "--isolated",
            "--line-length",
            str(min(limit, 320)),
            "--config",
            "format.quote-style='preserve'",
            "--range",
            f"{line}:1-{line + 1}:1",
        )
        wrapped = _format(cmd, path, text, check=False, extra=extra)
        if wrapped:
            text = wrapped
    return text
