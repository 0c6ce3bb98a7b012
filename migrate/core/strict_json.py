"""Strict JSON for every report: JSON has no NaN or Infinity, so a non-finite float (an
overflowed output's relative error, a NaN loss, the cosine of an all-NaN tensor) is written
as null; the report's own fields (``nonfinite`` counts, ``cause``) say why."""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["dumps", "finite"]


def finite(value: Any) -> Any:
    """``value`` with every non-finite float made None, to full depth."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, indent: int | None = 1, **kwargs: Any) -> str:
    """``json.dumps`` of ``value`` with non-finite numbers as null (never ``NaN``)."""
    return json.dumps(finite(value), indent=indent, allow_nan=False, **kwargs)
