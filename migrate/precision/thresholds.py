"""Gate thresholds: defaults per precision class from thresholds.yaml, a user gate file
merged on top (every key checked), a profile, per-module-glob overrides, and an allowed
violation count. The keys a class may hold come from the metric registry."""

from __future__ import annotations

import difflib
import fnmatch
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.core.inputs import check_glob, load_yaml
from migrate.precision import metrics
from migrate.precision.classes import BAND_KEYS, DEFAULTS_FILE, EXACT, registry
from migrate.precision.run_precision import dtype_class, loosest

# Per-class keys that are neither metric limits nor bands, each a share in [0, 1]:
# grad_floor (grad_floor.py) - a gradient below that share of the gradient it was computed
# from is numerically zero at the class's resolution.
SHARE_KEYS = ("grad_floor",)
TOP_KEYS = (
    "profile",
    "profiles",
    "dtypes",
    "overrides",
    "allowed_violations",
    "fail_on_missing",
    "rel_floor",
    "min_compared",
    "grad_floor",
    "carry_gain",
)
PROFILE_KEYS = ("why", "reduced_fp32", "unknown_flags")
DTYPE_ALIASES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "half": "float16",
    "fp32": "float32",
    "float": "float32",
    "fp64": "float64",
    "double": "float64",
    "tf32": "hf32",
}


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
    grad_floor: float | None = None  # a gate file's top-level value: every class
    carry_gain: float = 2.0
    profile_name: str = "ascend"
    profile: dict[str, Any] = field(default_factory=dict)

    def class_of(self, ref_dtype: str, tgt_dtype: str, run_class: str | None = None) -> str:
        a, b = dtype_class(ref_dtype), dtype_class(tgt_dtype)
        if a is None or b is None:
            return EXACT
        return loosest(a, b, run_class) or EXACT

    def grad_floor_of(self, th: dict[str, Any]) -> float:
        """The grad_floor share for thresholds ``th`` (of one entry)."""
        if self.grad_floor is not None:
            return self.grad_floor
        return float(th.get("grad_floor") or 0.0)

    def skips(self, name: str) -> bool:
        """An override with ``skip: true`` matches the module."""
        skip = False
        for ov in self.overrides:
            if fnmatch.fnmatchcase(name, ov["match"]) and "skip" in ov:
                skip = bool(ov["skip"])
        return skip

    def for_entry(
        self,
        name: str,
        ref_dtype: str,
        tgt_dtype: str,
        run_class: str | None = None,
        replay: bool = False,
        kind: str = "",
    ) -> dict[str, Any]:
        """Thresholds for one aligned pair; ``skip`` when an override says so, ``class``
        the precision class they come from. Gradients (``kind`` backward.*) use the
        grad_ variants, replay the replay_ ones."""
        cls = self.class_of(ref_dtype, tgt_dtype, run_class)
        out = dict(self.dtypes[cls])
        for ov in self.overrides:
            if fnmatch.fnmatchcase(name, ov["match"]):
                out.update({k: v for k, v in ov.items() if k not in ("match", "why")})
        for variant, on in (("grad_", kind.startswith("backward")), ("replay_", replay)):
            if on:
                out.update(
                    {
                        k[len(variant) :]: v
                        for k, v in list(out.items())
                        if k.startswith(variant) and k not in SHARE_KEYS
                    }
                )
        out["class"], out["rel_floor"] = cls, self.rel_floor
        return out


def _read(path: Path, what: str = "--gate") -> dict:
    """A gate file: a bounded regular file, YAML with alias and size limits (core/inputs)."""
    doc = load_yaml(path, what) or {}
    if not isinstance(doc, dict):
        raise UsageError(f"{escape(str(path))}: gate file must be a YAML mapping")
    return doc


def _show(value: Any) -> str:
    """A value for a message: short, escaped, never the repr of a whole structure."""
    if isinstance(value, (dict, list)):
        return f"a {'mapping' if isinstance(value, dict) else 'list'}"
    return escape(repr(value))[:80]


def _unknown(where: str, key: Any, known: set[str] | tuple[str, ...], alias: str = "") -> None:
    hint = alias or next(iter(difflib.get_close_matches(str(key), sorted(known), 1)), "")
    raise UsageError(f"{where}: unknown key {_show(key)}" + (f" (did you mean {hint!r}?)" if hint else ""))


def _number(where: str, value: Any, low: float, high: float = math.inf, integer: bool = False) -> float:
    """``value`` if it is a finite number (an integer when asked) in [low, high]: a gate
    with .nan or .inf thresholds can never fail, so it is an error."""
    kind = int if integer else (int, float)
    if (
        isinstance(value, bool)
        or not isinstance(value, kind)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        span = f"in [{low:g}, {high:g}]" if math.isfinite(high) else f">= {low:g}"
        raise UsageError(
            f"{where} must be {'an integer' if integer else 'a number'} {span} (finite), got {_show(value)}"
        )
    return value


def _threshold_range(key: str) -> tuple[float, float]:
    """Cosine bounds live in [-1, 1]; every other threshold is a distance or a share."""
    base = key.removeprefix("replay_").removeprefix("grad_")
    return (-1.0, 1.0) if base.startswith("cosine_") else (0.0, math.inf)


def _check_entry(where: str, entry: Any, extra: tuple[str, ...] = ()) -> None:
    if not isinstance(entry, dict):
        raise UsageError(f"{where} must be a mapping")
    known = threshold_keys()
    for key, value in entry.items():
        if key in extra or key == "why":
            continue
        if key in SHARE_KEYS:
            _share(f"{where}.{key}", value)
            continue
        if key not in known:
            _unknown(where, key, known | set(extra) | set(SHARE_KEYS))
        if value is not None:
            _number(f"{where}.{key}", value, *_threshold_range(key))


def _share(where: str, value: Any) -> None:
    _number(where, value, 0.0, 1.0)


def _check_top(path: Any, doc: dict) -> None:
    for key in doc:
        if key not in TOP_KEYS and not str(key).startswith("why"):
            _unknown(str(path), key, TOP_KEYS)


def _dtypes(path: Any, user: dict) -> dict[str, dict[str, Any]]:
    dtypes = registry().bands()
    given = user.get("dtypes") or {}
    if not isinstance(given, dict):
        raise UsageError(f"{path}: dtypes must be a mapping of class: thresholds")
    for dtype, entry in given.items():
        if dtype not in dtypes:
            known = tuple(dtypes)
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
        check_glob(ov["match"], f"{path}: overrides[{i}].match")
        if "skip" in ov and not isinstance(ov["skip"], bool):
            raise UsageError(f"{path}: overrides[{i}].skip must be true or false, got {_show(ov['skip'])}")
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
    """The default thresholds with the gate file at ``path`` merged over them: every key
    known, every threshold a finite number in its range (a NaN bound passes everything),
    every flag a boolean; UsageError (exit 2) otherwise."""
    base = _read(DEFAULTS_FILE, "thresholds")
    user = _read(Path(path)) if path is not None else {}
    where = escape(str(path))
    _check_top(where, user)

    def top(key: str, default: Any, low: float, high: float = math.inf, integer: bool = False) -> float:
        return _number(f"{where}: {key}", user.get(key, base.get(key, default)), low, high, integer)

    allowed = int(top("allowed_violations", 0, 0, integer=True))
    share = top("min_compared", 0.5, 0, 1)
    floor = top("rel_floor", 1e-3, 0)
    # grad_floor: a gate file's top-level value applies to every class; without one each
    # class's own (thresholds.yaml) is used
    grad_floor = None if user.get("grad_floor") is None else top("grad_floor", None, 0, 1)
    gain = top("carry_gain", 2.0, 0, 1e6)
    if 0 < gain < 1:
        raise UsageError(f"{where}: carry_gain must be 0 (off) or a number in [1, 1e6], got {_show(gain)}")
    missing = user.get("fail_on_missing", base.get("fail_on_missing", True))
    if not isinstance(missing, bool):
        raise UsageError(f"{where}: fail_on_missing must be true or false, got {_show(missing)}")
    if not isinstance(user.get("profile", ""), str):
        raise UsageError(f"{where}: profile must be a name, got {_show(user['profile'])}")
    if not isinstance(user.get("profiles") or {}, dict):
        raise UsageError(f"{where}: profiles must be a mapping of name: settings")
    name, prof = _profile(where, base, user, profile)
    return Gate(
        dtypes=_dtypes(where, user),
        overrides=_overrides(where, user),
        allowed_violations=allowed,
        fail_on_missing=missing,
        rel_floor=float(floor),
        min_compared=float(share),
        grad_floor=None if grad_floor is None else float(grad_floor),
        carry_gain=float(gain),
        profile_name=name,
        profile=prof,
    )
