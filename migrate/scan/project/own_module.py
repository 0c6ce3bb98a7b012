"""Where the port's own helper module goes where the project has none: the configured
module, else ``<package>/_device.py`` (migrate/core/device_helpers).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from migrate.core import device_helpers
from migrate.scan.project.reading import _read


def _under(path: str, folder: str) -> bool:
    folder = os.path.realpath(folder)
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def _own_module_path(top: Path, configured: str | None) -> tuple[str, Path] | None:
    """Where the port's helper module goes: the configured module, else <top>/_device.py
    (another free name if that one holds something else)."""
    if configured:
        parts = configured.split(".")
        if parts[0] != top.name or not all(p.isidentifier() for p in parts):
            return None
        return configured, top.parent.joinpath(*parts).with_suffix(".py")
    for name in (device_helpers.MODULE_NAME, device_helpers.MODULE_NAME + "_helpers"):
        path = top / f"{name}.py"
        if not os.path.lexists(path) or _is_ours(path):
            return f"{top.name}.{name}", path
    return None


def _is_ours(path: Path) -> bool:
    data = _read(path)
    if data is None:
        return False
    try:
        tree = ast.parse(data.decode("utf-8", "replace"))
    except (SyntaxError, ValueError):
        return False
    return any(device_helpers.recognise(n) for n in tree.body)
