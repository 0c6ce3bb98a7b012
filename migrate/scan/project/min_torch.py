"""The declared minimum torch (pyproject, setup.py, setup.cfg, requirements files next to
the package or script, the lowest of the nearest folder that has any): forms a port writes
must exist in it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from migrate.scan.project.reading import _read

_TORCH_MIN = re.compile(r"""(?<![\w.-])torch\s*(?:\[[^\]]*\])?\s*(?:>=|~=|==|>)\s*(\d+)\.(\d+)""")


_DEP_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt")


def _dep_files(folder: Path) -> list[Path]:
    """The dependency files of ``folder``: _DEP_FILES, requirements-*.txt / requirements_*.txt
    beside them and requirements/*.txt."""
    found = [folder / name for name in _DEP_FILES]
    try:
        found += sorted(p for p in folder.glob("requirements?*.txt") if p.name != "requirements.txt")
        found += sorted((folder / "requirements").glob("*.txt"))
    except OSError:
        pass
    return found


def declared_min_torch(folder: Path, root: Path) -> tuple[int, int] | None:
    """The lowest torch the project declares (``torch>=X.Y`` in the dependency files of
    ``folder`` or of its nearest parent, up to the scan root, that has any), or None when it
    declares none. Every dependency file of that folder counts, the lowest floor wins (a
    ``requirements.txt`` allowing 1.11 beside a pyproject asking 2.3: the code must run on
    1.11): forms a port writes must exist in the oldest torch the project allows."""
    try:
        stop = os.path.realpath(root)
        cur = Path(os.path.realpath(folder))
    except OSError:
        return None
    for _ in range(8):
        versions = []
        for path in _dep_files(cur):
            data = _read(path)
            if data is not None:
                versions += [(int(a), int(b)) for a, b in _TORCH_MIN.findall(data.decode("utf-8", "replace"))]
        if versions:
            return min(versions)
        if str(cur) == stop or not str(cur).startswith(stop) or cur.parent == cur:
            break
        cur = cur.parent
    return None
