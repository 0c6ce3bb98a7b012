"""Precision classes: one record per class, its dtype facts here, its bands in thresholds.yaml.

A class's dtype facts (explicit mantissa bits, the exponent of its smallest normal, the
tensor dtypes judged by it) are the one table :data:`FACTS`; tests check each against
``torch.finfo`` (torch is optional, so loading a gate does not import it). Its bands (the
tolerances and metric limits) are its entry under ``dtypes:`` in thresholds.yaml. The two
are joined when the classes load, and must name the same classes: a class on one side only,
or a YAML entry without its bands (``rtol``, ``atol``, ``atol_rms``), is a
:class:`PrecisionClassError` naming thresholds.yaml and the class, never a class judged
exactly or with another's bands.

Adding a class (``float8_e4m3fn``) is a row of :data:`FACTS` and an entry of the YAML.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from migrate.core.registry import placeholders

__all__ = [
    "BAND_KEYS",
    "DEFAULTS_FILE",
    "EXACT",
    "FACTS",
    "Classes",
    "DtypeFacts",
    "PrecisionClass",
    "PrecisionClassError",
    "load",
    "registry",
]

DEFAULTS_FILE = Path(__file__).with_name("thresholds.yaml")
BAND_KEYS = ("rtol", "atol", "atol_rms")
# The YAML entry for tensors no class covers (integers, bools): judged exactly.
EXACT = "default"


@dataclass(frozen=True)
class DtypeFacts:
    mantissa: int  # explicit mantissa bits: torch.finfo(dtype).eps == 2**-mantissa
    min_exp: int  # the smallest normal is 2**min_exp (torch.finfo(dtype).tiny)
    dtypes: tuple[str, ...] = ()  # tensor dtypes judged by the class


# hf32 (TF32/HF32 matmul and convolution inputs) has no tensor dtype: float16's mantissa in
# float32's range, summed in float32.
FACTS: dict[str, DtypeFacts] = {
    "bfloat16": DtypeFacts(7, -126, ("bfloat16",)),
    "float16": DtypeFacts(10, -14, ("float16",)),
    "hf32": DtypeFacts(10, -126),
    "float32": DtypeFacts(23, -126, ("float32", "complex64")),
    "float64": DtypeFacts(52, -1022, ("float64", "complex128")),
}


class PrecisionClassError(ValueError):
    """The dtype facts and thresholds.yaml disagree on a class: names the file and the class."""


@dataclass(frozen=True)
class PrecisionClass:
    name: str
    unit_roundoff: float  # 2^-(mantissa bits + 1): the relative error of one rounding
    smallest_normal: float  # errors below it cannot be resolved (subnormal spacing is fixed)
    dtypes: tuple[str, ...]
    bands: Mapping[str, Any]  # the class's thresholds.yaml entry

    @classmethod
    def join(cls, name: str, facts: DtypeFacts, bands: Mapping[str, Any]) -> PrecisionClass:
        return cls(name, 2.0 ** -(facts.mantissa + 1), 2.0**facts.min_exp, facts.dtypes, bands)


@dataclass(frozen=True)
class Classes:
    records: tuple[PrecisionClass, ...]  # least precise first
    exact: Mapping[str, Any]  # the bands of EXACT

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.records)

    def __getitem__(self, name: str) -> PrecisionClass:
        for r in self.records:
            if r.name == name:
                return r
        raise PrecisionClassError(f"unknown precision class {name!r} (known: {', '.join(self.names)})")

    def of_dtype(self, dtype: str | None) -> str | None:
        """The class judging tensors of ``dtype``; None for integers, bools and unknowns."""
        return next((r.name for r in self.records if dtype in r.dtypes), None)

    def loosest(self, *names: str | None) -> str | None:
        """The least precise of ``names`` (None and ``default`` ignored)."""
        order = self.names
        known = [n for n in names if n in order]
        return min(known, key=order.index) if known else None

    def unit_roundoff(self, name: str | None) -> float:
        """One rounding's relative error in class ``name``; 0 for exact (``default``, none given)."""
        return 0.0 if not name or name == EXACT else self[name].unit_roundoff

    def smallest_normal(self, name: str | None) -> float | None:
        """The smallest normal of class ``name``; None for exact (``default``, none given)."""
        return None if not name or name == EXACT else self[name].smallest_normal

    def bands(self) -> dict[str, dict[str, Any]]:
        """Every class's thresholds.yaml entry (``default`` included), a fresh copy."""
        return {**{r.name: dict(r.bands) for r in self.records}, EXACT: dict(self.exact)}


def _entries(path: Path, doc: Any) -> dict[str, Any]:
    entries = doc.get("dtypes") if isinstance(doc, dict) else None
    if not isinstance(entries, dict):
        raise PrecisionClassError(f"{path.name}: 'dtypes' must be a mapping of precision class: bands")
    for name, entry in entries.items():
        left = placeholders(entry)
        if left:
            raise PrecisionClassError(f"{path.name}: dtypes.{name} is a scaffold: fill in {', '.join(left)}")
        missing = [k for k in BAND_KEYS if not isinstance(entry, dict) or k not in entry]
        if missing:
            raise PrecisionClassError(
                f"{path.name}: dtypes.{name}: the class has no {', '.join(missing)} "
                "(every class needs its bands)"
            )
    if EXACT not in entries:
        raise PrecisionClassError(f"{path.name}: dtypes.{EXACT} (exact tensors: integers, bools) is missing")
    return entries


def _check_sides(path: Path, entries: dict[str, Any], facts: Mapping[str, DtypeFacts]) -> None:
    where = f"{__name__.replace('.', '/')}.py FACTS"
    for name in entries:
        if name != EXACT and name not in facts:
            raise PrecisionClassError(
                f"{path.name}: dtypes.{name}: no dtype facts for this precision class "
                f"(add its mantissa bits, smallest normal and dtypes to {where})"
            )
    for name in facts:
        if name not in entries:
            raise PrecisionClassError(
                f"{path.name}: dtypes.{name} is missing: {where} has dtype facts for this precision "
                "class but thresholds.yaml gives it no bands"
            )
    owners: dict[str, str] = {}
    for name, f in facts.items():
        for dtype in f.dtypes:
            if dtype in owners:
                raise PrecisionClassError(f"{where}: dtype {dtype!r} is in both {owners[dtype]} and {name}")
            owners[dtype] = name


def load(path: Path = DEFAULTS_FILE, facts: Mapping[str, DtypeFacts] = FACTS) -> Classes:
    """The classes of ``path``'s ``dtypes:`` joined with ``facts``, least precise first
    (largest unit roundoff; a tie goes to the narrower range: float16 before hf32)."""
    from migrate.core.inputs import load_yaml

    entries = _entries(path, load_yaml(path, "thresholds"))
    _check_sides(path, entries, facts)
    records = sorted(
        (PrecisionClass.join(name, f, entries[name]) for name, f in facts.items()),
        key=lambda r: (-r.unit_roundoff, -r.smallest_normal),
    )
    return Classes(tuple(records), entries[EXACT])


@cache
def registry() -> Classes:
    """The shipped classes (thresholds.yaml and :data:`FACTS`), loaded once."""
    return load()
