"""Comparison metrics, one registration each: the registration drives everything else.

    @METRICS.register("max_abs", limit="max", fmt=".3g")
    def max_abs(p: Pair) -> float: ...

A metric's name is its field in every compare/replay entry (docs/contracts.md §5); with a
``limit`` ("min" or "max") it can be gated by ``<key>_<limit>`` and warned by ``<key>_warn``
in a gate file (``key`` defaults to the name); ``fmt`` and ``label`` drive the text, HTML
and Markdown columns. ``tier="tensor"`` metrics get a :class:`Pair` of full tensors (flat numpy arrays:
``p.ref``, ``p.tgt``, ``p.diff``, ``p.absdiff``...);
``tier="stats"`` metrics get the two records' ``stats`` (stats-only dumps) and return None
when they cannot tell. ``estimates="cosine"`` makes a stats metric fill (and be gated as)
the tensor metric it estimates; ``noise="field"`` gates a metric only where it exceeds
``<field>_k`` times that field (what chance produces; ``<field>_k`` is a gate key, 1 when
unset). Modules of this package are discovered by the registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from migrate.core.registry import Registry

_TIERS = ("tensor", "stats")
_LIMITS = (None, "min", "max")


def _check(name: str, fn: Any, meta: dict[str, Any]) -> None:
    if not callable(fn):
        raise TypeError("a metric must be a function")
    unknown = set(meta) - {"tier", "limit", "key", "fmt", "label", "estimates", "show", "noise"}
    if unknown:
        raise ValueError(f"unknown registration option(s) {sorted(unknown)}")
    if meta.get("tier", "tensor") not in _TIERS:
        raise ValueError(f"tier must be one of {_TIERS}")
    if meta.get("limit") not in _LIMITS:
        raise ValueError("limit must be 'min', 'max' or absent")


METRICS: Registry = Registry("precision metric", __name__, check=_check)


@dataclass(frozen=True)
class MetricSpec:
    name: str
    fn: Any
    tier: str = "tensor"
    limit: str | None = None
    key: str = ""
    fmt: str = ".3g"
    label: str = ""
    estimates: str | None = None
    show: bool = True  # a column in the text/HTML/Markdown reports
    noise: str | None = None  # a field: the value is gated only above it (chance level)

    @property
    def field(self) -> str:
        """The entry field this metric fills."""
        return self.estimates or self.name

    @property
    def gate_keys(self) -> tuple[str, ...]:
        return (f"{self.key}_{self.limit}", f"{self.key}_warn") if self.limit else ()

    @property
    def noise_key(self) -> str | None:
        """The gate key of the multiple of ``noise`` the value must exceed to be gated."""
        return f"{self.noise}_k" if self.noise else None


def specs(tier: str | None = None) -> list[MetricSpec]:
    out = []
    for name, fn in METRICS.items():
        meta = METRICS.meta(name)
        spec = MetricSpec(
            name=name,
            fn=fn,
            tier=meta.get("tier", "tensor"),
            limit=meta.get("limit"),
            key=meta.get("key") or name,
            fmt=meta.get("fmt", ".3g"),
            label=meta.get("label") or name,
            estimates=meta.get("estimates"),
            show=meta.get("show", True),
            noise=meta.get("noise"),
        )
        if tier is None or spec.tier == tier:
            out.append(spec)
    return out


def fields() -> list[str]:
    """Every entry field a metric fills, in registration order."""
    seen: list[str] = []
    for spec in specs():
        if spec.field not in seen:
            seen.append(spec.field)
    return seen


def columns() -> list[MetricSpec]:
    """The report columns: every shown metric that owns its field."""
    return [s for s in specs() if s.show and s.estimates is None]


def gated() -> list[MetricSpec]:
    """Specs that own gate keys (an estimating metric uses its target's keys)."""
    return [s for s in specs() if s.limit and s.estimates is None]


def gate_keys() -> set[str]:
    return {k for s in gated() for k in (*s.gate_keys, s.noise_key) if k}


def compute(tier: str, *args: Any) -> dict[str, float | None]:
    """Every metric of ``tier`` on ``args`` (a Pair, or the two records' stats)."""
    return {s.field: s.fn(*args) for s in specs(tier)}
