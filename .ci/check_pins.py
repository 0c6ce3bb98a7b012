"""Refuse an unpinned gate tool: the lint, type and import-layer gates of .ci/run must give
the same answer on every run, so the dev extra pins each tool with ==, and the version
installed must be that one. Exit 1 naming the tool otherwise."""

from __future__ import annotations

import re
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import tomllib

GATES = ("ruff", "mypy", "import-linter")


def main() -> int:
    project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml")
                           .read_text(encoding="utf-8"))["project"]
    dev = project["optional-dependencies"]["dev"]
    problems = []
    for tool in GATES:
        spec = next((d for d in dev if re.match(rf"{re.escape(tool)}\s*[=<>!~\[;]|{re.escape(tool)}$",
                                                 d)), None)
        pin = re.fullmatch(rf"{re.escape(tool)}\s*==\s*([\w.]+)", spec or "")
        if pin is None:
            problems.append(f"{tool}: not pinned with == in the dev extra ({spec or 'missing'})")
            continue
        try:
            installed = version(tool)
        except PackageNotFoundError:
            problems.append(f"{tool}: pinned to {pin.group(1)} but not installed")
            continue
        if installed != pin.group(1):
            problems.append(f"{tool}: pinned to {pin.group(1)}, {installed} installed")
    for line in problems:
        print(f"gate tools: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
