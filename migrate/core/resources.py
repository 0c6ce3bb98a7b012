"""Where the shipped data lives: rules/ and op_registry/.

In a wheel they are packaged as ``migrate/_data/<name>``; in a source checkout (editable
install or ``python -m migrate`` from the repo) they are the top-level folders.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path


@cache
def data_dir(name: str) -> Path:
    """Return the folder holding the shipped data set ``name`` ("rules" or "op_registry")."""
    packaged = Path(str(resources.files("migrate"))) / "_data" / name
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"ascend-migrate data folder {name!r} is missing from the install")


def rules_dir() -> Path:
    return data_dir("rules")


def op_registry_dir() -> Path:
    return data_dir("op_registry")
