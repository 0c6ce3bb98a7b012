"""The chip peaks table (data/chips.yaml): which chip a device name is, and its peak dense
throughput for a compute dtype, the denominator of MFU.

The table is checked when it loads (each row's keys and types, unique ids, regular
expressions that compile, dtypes from :data:`DTYPES`, positive finite peaks, a source per
row): a bad row is a :class:`ChipTableError` naming the file and the row.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from migrate.core.schema import one_of, param, problems, record, regex, strings

__all__ = ["DTYPES", "Chip", "ChipTableError", "chips", "dtype_name", "find_chip"]

CHIPS_FILE = Path(__file__).resolve().parent.parent / "data" / "chips.yaml"
DTYPES = ("fp32", "tf32", "hf32", "bf16", "fp16", "fp8", "int8")
_ALIASES = {
    "float32": "fp32",
    "float": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float8": "fp8",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
}
VENDORS = ("nvidia", "huawei")


def _peaks(value: Any) -> str | None:
    for dtype, peak in value.items():
        if dtype not in DTYPES:
            return f"unknown dtype {dtype!r} (known: {', '.join(DTYPES)})"
        if isinstance(peak, bool) or not isinstance(peak, int | float) or not (0 < peak < math.inf):
            return f"the {dtype} peak must be a positive number of TFLOPS, not {peak!r}"
    return None if value else "lists no dtype"


ROW = record(
    id=param(str, required=True),
    match=strings(required=True, check=regex),
    vendor=param(str, required=True, check=one_of(*VENDORS)),
    peak_tflops=param(dict, required=True, check=_peaks),
    source=param(str, required=True),
)


@dataclass(frozen=True)
class Chip:
    id: str
    patterns: tuple[re.Pattern, ...]
    vendor: str
    peak_tflops: dict[str, float]
    source: str

    def peak_flops(self, dtype: str) -> float | None:
        """Peak operations a second for ``dtype`` (a :data:`DTYPES` name), or None."""
        tflops = self.peak_tflops.get(dtype)
        return None if tflops is None else float(tflops) * 1e12


class ChipTableError(ValueError):
    """data/chips.yaml does not fit the schema: names the row."""


def _row(raw: Any, k: int) -> Chip:
    where = f"{CHIPS_FILE.name}: row {k + 1}"
    if not isinstance(raw, dict):
        raise ChipTableError(f"{where}: a row is a mapping, not {type(raw).__name__}")
    why = problems(ROW.fields or {}, raw, where, "key")
    if why:
        raise ChipTableError(why)
    if not raw["match"]:
        raise ChipTableError(f"{where} ({raw['id']}): 'match' lists no pattern")
    return Chip(
        raw["id"],
        tuple(re.compile(p, re.IGNORECASE) for p in raw["match"]),
        raw["vendor"],
        dict(raw["peak_tflops"]),
        raw["source"].strip(),
    )


@cache
def chips(path: Path = CHIPS_FILE) -> tuple[Chip, ...]:
    """Every row of the table, in file order (the first match wins)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    rows = data.get("chips") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        raise ChipTableError(f"{path.name}: needs a non-empty list 'chips'")
    out = tuple(_row(raw, k) for k, raw in enumerate(rows))
    ids = [c.id for c in out]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ChipTableError(f"{path.name}: chip id {twice[0]!r} appears more than once")
    return out


def find_chip(name: str | None) -> Chip | None:
    """The row whose pattern matches the device name ``name`` (or a row's id), or None."""
    if not name:
        return None
    for chip in chips():
        if chip.id.lower() == name.strip().lower() or any(p.search(name) for p in chip.patterns):
            return chip
    return None


def dtype_name(value: str) -> str | None:
    """``bf16`` for ``bf16``/``bfloat16``/``torch.bfloat16``; None when not a known dtype."""
    key = value.strip().lower().removeprefix("torch.")
    key = _ALIASES.get(key, key)
    return key if key in DTYPES else None
