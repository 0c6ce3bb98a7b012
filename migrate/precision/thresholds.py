"""Gate thresholds: defaults per dtype from thresholds.yaml, a user gate file merged on top,
per-module-glob overrides, and an allowed violation count."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from migrate.core.errors import UsageError

DEFAULTS_FILE = Path(__file__).with_name("thresholds.yaml")
KEYS = ("rtol", "atol", "cosine_min", "cosine_warn", "mismatch_max", "mismatch_warn",
        "replay_mismatch_max", "stats_norm_rel_max", "max_abs_max")
# Less precise first: the pair is judged by the looser of its two dtypes.
_PRECISION = ["bfloat16", "float16", "float32", "float64"]


@dataclass
class Gate:
    dtypes: dict[str, dict[str, Any]]
    overrides: list[dict[str, Any]] = field(default_factory=list)
    allowed_violations: int = 0
    fail_on_missing: bool = True
    rel_floor: float = 1e-3

    def for_entry(self, name: str, ref_dtype: str, tgt_dtype: str) -> dict[str, Any]:
        """Thresholds for one aligned pair; includes ``skip`` when an override says so."""
        out = dict(self.dtypes.get(_looser(ref_dtype, tgt_dtype)) or self.dtypes["default"])
        for ov in self.overrides:
            if fnmatch.fnmatchcase(name, ov["match"]):
                out.update({k: v for k, v in ov.items() if k in KEYS or k == "skip"})
        return out


def _looser(a: str, b: str) -> str:
    if a in _PRECISION and b in _PRECISION:
        return min(a, b, key=_PRECISION.index)
    return "default"


def _read(path: Path) -> dict:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"{path}: cannot read gate file: {exc}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: gate file must be a YAML mapping")
    return doc


def _check_numbers(where: str, entry: dict) -> None:
    for key, value in entry.items():
        if key in KEYS and not isinstance(value, (int, float)):
            raise UsageError(f"{where}: {key} must be a number, got {value!r}")


def load_gate(path: str | Path | None = None) -> Gate:
    base = _read(DEFAULTS_FILE)
    user = _read(Path(path)) if path else {}
    dtypes = {k: dict(v) for k, v in base["dtypes"].items()}
    for dtype, entry in (user.get("dtypes") or {}).items():
        if not isinstance(entry, dict):
            raise UsageError(f"{path}: dtypes.{dtype} must be a mapping")
        _check_numbers(f"{path}: dtypes.{dtype}", entry)
        dtypes.setdefault(dtype, dict(dtypes["default"])).update(entry)
    overrides = user.get("overrides") or []
    if not isinstance(overrides, list):
        raise UsageError(f"{path}: overrides must be a list")
    for i, ov in enumerate(overrides):
        if not isinstance(ov, dict) or not isinstance(ov.get("match"), str):
            raise UsageError(f"{path}: overrides[{i}] needs a 'match' glob")
        _check_numbers(f"{path}: overrides[{i}]", ov)
    allowed = user.get("allowed_violations", base.get("allowed_violations", 0))
    if not isinstance(allowed, int) or allowed < 0:
        raise UsageError(f"{path}: allowed_violations must be a non-negative integer")
    return Gate(dtypes=dtypes, overrides=list(overrides), allowed_violations=allowed,
                fail_on_missing=bool(user.get("fail_on_missing", base.get("fail_on_missing"))),
                rel_floor=float(user.get("rel_floor", base.get("rel_floor", 1e-3))))
