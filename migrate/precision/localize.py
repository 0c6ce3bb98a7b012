"""Name where precision is first lost: the first failing entry in execution order.

Entries come in the reference's execution order, so for nested modules the innermost,
earliest tensor wins. Relative errors never decide on their own: metrics divide by a
floor near zero (see metrics.Pair.floor) and mismatches use atol + rtol*|ref|, so noise
on near-zero values does not raise a false first divergence.
"""

from __future__ import annotations

from typing import Any


def first_divergence(entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    for e in entries:
        if e["status"] == "fail":
            first = {
                "name": e["name"],
                "call": e["call"],
                "kind": e["kind"],
                "index": e["index"],
                "reason": e["reason"],
            }
            if e.get("tied"):
                first["tied"] = e["tied"]
            return first
    return None
