"""The op alias table (data/op_aliases.yaml): backend-specific framework op names folded to
the name both sides of ``--ref`` share (``aten::cudnn_convolution`` and ``aten::_convolution``
are both ``aten::convolution``). Checked when it loads: a mapping of op names to op names,
no alias that is itself folded again."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml

__all__ = ["ALIASES_FILE", "aliases", "fold"]

ALIASES_FILE = Path(__file__).resolve().parent.parent / "data" / "op_aliases.yaml"
_OP = re.compile(r"[A-Za-z_][\w.]*::[A-Za-z_]\w*")


class AliasTableError(ValueError):
    """data/op_aliases.yaml does not fit the schema: names the entry."""


@cache
def aliases(path: Path = ALIASES_FILE) -> dict[str, str]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    table = data.get("aliases") if isinstance(data, dict) else None
    if not isinstance(table, dict) or not table:
        raise AliasTableError(f"{path.name}: needs a non-empty mapping 'aliases'")
    for key, value in table.items():
        for op in (key, value):
            if not isinstance(op, str) or not _OP.fullmatch(op):
                raise AliasTableError(f"{path.name}: {key!r}: {op!r} is not an op name (namespace::name)")
        if value in table and table[value] != value:
            raise AliasTableError(f"{path.name}: {key!r} folds to {value!r}, which is folded again")
    return dict(table)


def fold(op: str) -> str:
    """The shared name of framework op ``op`` (itself when the table does not list it)."""
    return aliases().get(op, op)
