"""Gate thresholds: defaults per precision class from thresholds.yaml, a user gate file
merged on top (every key checked), a profile, per-module-glob overrides, and an allowed
violation count. The keys a class may hold come from the metric registry."""

from __future__ import annotations

import difflib
import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from migrate.core.errors import UsageError
from migrate.precision import metrics
from migrate.precision.run_precision import CLASSES, dtype_class, loosest

DEFAULTS_FILE = Path(__file__).with_name("thresholds.yaml")
BAND_KEYS = ("rtol", "atol", "atol_rms")
TOP_KEYS = ("profile", "profiles", "dtypes", "overrides", "allowed_violations",
            "fail_on_missing", "rel_floor", "min_compared", "grad_floor")
PROFILE_KEYS = ("why", "reduced_fp32", "unknown_flags")
DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32",
                 "float": "float32", "fp64": "float64", "double": "float64", "tf32": "hf32"}


# A key K may have variants: replay_K (used by replay) and grad_K (backward.* records).
VARIANTS = ("replay_", "grad_")


def threshold_keys() -> set[str]:
    base = set(BAND_KEYS) | metrics.gate_keys()
    return base | {f"{v}{k}" for v in VARIANTS for k in base}


@dataclass
class Gate:
    dtypes: dict[str, dict[str, Any]]
    overrides: list[dict[str, Any]] = field(default_factory=list)
    allowed_violations: int = 0
    fail_on_missing: bool = True
    rel_floor: float = 1e-3
    min_compared: float = 0.5
    grad_floor: float = 0.1
    profile_name: str = "ascend"
    profile: dict[str, Any] = field(default_factory=dict)

    def class_of(self, ref_dtype: str, tgt_dtype: str, run_class: str | None = None) -> str:
        a, b = dtype_class(ref_dtype), dtype_class(tgt_dtype)
        if a is None or b is None:
            return "default"
        return loosest(a, b, run_class) or "default"

    def skips(self, name: str) -> bool:
        """An override with ``skip: true`` matches the module."""
        skip = False
        for ov in self.overrides:
            if fnmatch.fnmatchcase(name, ov["match"]) and "skip" in ov:
                skip = bool(ov["skip"])
        return skip

    def for_entry(self, name: str, ref_dtype: str, tgt_dtype: str,
                  run_class: str | None = None, replay: bool = False,
                  kind: str = "") -> dict[str, Any]:
        """Thresholds for one aligned pair; ``skip`` when an override says so, ``class``
        the precision class they come from. Gradients (``kind`` backward.*) use the
        grad_ variants, replay the replay_ ones."""
        cls = self.class_of(ref_dtype, tgt_dtype, run_class)
        out = dict(self.dtypes.get(cls) or self.dtypes["default"])
        for ov in self.overrides:
            if fnmatch.fnmatchcase(name, ov["match"]):
                out.update({k: v for k, v in ov.items() if k not in ("match", "why")})
        for variant, on in (("grad_", kind.startswith("backward")), ("replay_", replay)):
            if on:
                out.update({k[len(variant):]: v for k, v in list(out.items())
                            if k.startswith(variant)})
        out["class"], out["rel_floor"] = cls, self.rel_floor
        return out


def _read(path: Path) -> dict:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"{path}: cannot read gate file: {' '.join(str(exc).split())}") \
            from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: gate file must be a YAML mapping")
    return doc


def _unknown(where: str, key: Any, known: set[str] | tuple[str, ...], alias: str = "") -> None:
    hint = alias or next(iter(difflib.get_close_matches(str(key), sorted(known), 1)), "")
    raise UsageError(f"{where}: unknown key {key!r}" + (f" (did you mean {hint!r}?)"
                                                          if hint else ""))


def _check_entry(where: str, entry: Any, extra: tuple[str, ...] = ()) -> None:
    if not isinstance(entry, dict):
        raise UsageError(f"{where} must be a mapping")
    known = threshold_keys()
    for key, value in entry.items():
        if key in extra or key == "why":
            continue
        if key not in known:
            _unknown(where, key, known | set(extra))
        if value is not None and (isinstance(value, bool) or
                                  not isinstance(value, (int, float))):
            raise UsageError(f"{where}.{key} must be a number or null, got {value!r}")


def _check_top(path: Any, doc: dict) -> None:
    for key in doc:
        if key not in TOP_KEYS and not str(key).startswith("why"):
            _unknown(str(path), key, TOP_KEYS)


def _dtypes(path: Any, base: dict, user: dict) -> dict[str, dict[str, Any]]:
    dtypes = {k: dict(v) for k, v in base["dtypes"].items()}
    given = user.get("dtypes") or {}
    if not isinstance(given, dict):
        raise UsageError(f"{path}: dtypes must be a mapping of class: thresholds")
    for dtype, entry in given.items():
        if dtype not in dtypes:
            known = (*CLASSES, "default")
            _unknown(f"{path}: dtypes", dtype, known, DTYPE_ALIASES.get(str(dtype).lower(), ""))
        _check_entry(f"{path}: dtypes.{dtype}", entry)
        dtypes[dtype].update(entry)
    return dtypes


def _overrides(path: Any, user: dict) -> list[dict[str, Any]]:
    overrides = user.get("overrides") or []
    if not isinstance(overrides, list):
        raise UsageError(f"{path}: overrides must be a list")
    for i, ov in enumerate(overrides):
        if not isinstance(ov, dict) or not isinstance(ov.get("match"), str):
            raise UsageError(f"{path}: overrides[{i}] needs a 'match' glob")
        _check_entry(f"{path}: overrides[{i}]", ov, extra=("match", "skip"))
    return list(overrides)


def _profile(path: Any, base: dict, user: dict, name: str | None) -> tuple[str, dict]:
    profiles = dict(base.get("profiles") or {})
    for pname, prof in (user.get("profiles") or {}).items():
        if not isinstance(prof, dict):
            raise UsageError(f"{path}: profiles.{pname} must be a mapping")
        for key in prof:
            if key not in PROFILE_KEYS:
                _unknown(f"{path}: profiles.{pname}", key, PROFILE_KEYS)
        profiles[pname] = {**profiles.get(pname, {}), **prof}
    chosen = name or user.get("profile") or base.get("profile", "ascend")
    if chosen not in profiles:
        raise UsageError(f"profile {chosen!r}: choose one of {', '.join(sorted(profiles))}")
    return chosen, profiles[chosen]


def load_gate(path: str | Path | None = None, profile: str | None = None) -> Gate:
    base = _read(DEFAULTS_FILE)
    user = _read(Path(path)) if path else {}
    _check_top(path, user)
    allowed = user.get("allowed_violations", base.get("allowed_violations", 0))
    if isinstance(allowed, bool) or not isinstance(allowed, int) or allowed < 0:
        raise UsageError(f"{path}: allowed_violations must be a non-negative integer")
    share = user.get("min_compared", base.get("min_compared", 0.5))
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise UsageError(f"{path}: min_compared must be a number in [0, 1]")
    floor = user.get("rel_floor", base.get("rel_floor", 1e-3))
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or floor < 0:
        raise UsageError(f"{path}: rel_floor must be a non-negative number")
    grad_floor = user.get("grad_floor", base.get("grad_floor", 0.1))
    if isinstance(grad_floor, bool) or not isinstance(grad_floor, (int, float)) or \
            not 0 <= grad_floor <= 1:
        raise UsageError(f"{path}: grad_floor must be a number in [0, 1]")
    name, prof = _profile(path, base, user, profile)
    return Gate(dtypes=_dtypes(path, base, user), overrides=_overrides(path, user),
                allowed_violations=allowed,
                fail_on_missing=bool(user.get("fail_on_missing", base.get("fail_on_missing"))),
                rel_floor=float(floor), min_compared=float(share),
                grad_floor=float(grad_floor), profile_name=name,
                profile=prof)
