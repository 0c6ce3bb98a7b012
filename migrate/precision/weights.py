"""Compare the per-tensor weight tables of two dumps (digest.weight_table): a weight that
differs is a root cause, reported before any activation.

Same dtype: the CRC32 must match. Different dtypes (an fp32 reference, a bf16 target): the
weight's relative error, estimated from the two sketches, must stay within two unit
roundoffs of the less precise dtype - what a cast can do, and far less than a fault.
"""

from __future__ import annotations

import math
from typing import Any

from migrate.precision import sketch
from migrate.precision.align import Mapping, rename, strip

# (unit roundoff, spacing of the subnormals): a cast moves an element by at most
# u * |w| + spacing / 2 (values below the smallest normal lose relative precision).
ROUNDING = {
    "bfloat16": (2.0**-8, 2.0**-133),
    "float16": (2.0**-11, 2.0**-24),
    "float32": (2.0**-24, 2.0**-149),
    "float64": (2.0**-53, 0.0),
}


def _cast_limit(a: str, b: str, numel: int) -> tuple[float, float] | None:
    """``(relative, absolute)`` bound on the L2 error of casting between ``a`` and ``b``,
    doubled for the sketch's spread."""
    ra, rb = ROUNDING.get(a), ROUNDING.get(b)
    if ra is None or rb is None:
        return None
    u, spacing = max(ra[0], rb[0]), max(ra[1], rb[1])
    return 2.0 * u, 2.0 * spacing * math.sqrt(max(numel, 1))


def _differs(r: dict, t: dict) -> str | None:
    if list(r.get("shape", [])) != list(t.get("shape", [])):
        return f"shape {r.get('shape')} vs {t.get('shape')}"
    if r.get("dtype") == t.get("dtype"):
        return None if r.get("crc") == t.get("crc") else "bytes differ (checksum)"
    numel = math.prod(r.get("shape") or [1])
    limit = _cast_limit(r.get("dtype", ""), t.get("dtype", ""), numel)
    a, b = sketch.decode(r.get("sketch")), sketch.decode(t.get("sketch"))
    if limit is None or a is None or b is None or not r.get("norm"):
        return None
    norm, diff = float(r["norm"]), sketch.diff_norm(a, b)
    if diff > limit[0] * norm + limit[1]:
        return (
            f"relative error {diff / norm:.3g} ({r['dtype']} vs {t['dtype']}; a cast "
            f"gives at most {(limit[0] * norm + limit[1]) / norm:.2g})"
        )
    return None


def compare_weights(
    ref_meta: dict, tgt_meta: dict, mapping: Mapping, tgt_prefix: str = "", ref_prefix: str = ""
) -> list[dict[str, Any]]:
    """``[{name, reason}]`` for every weight present in both dumps that differs."""
    ref_w, tgt_w = ref_meta.get("weights"), tgt_meta.get("weights")
    if not isinstance(ref_w, dict) or not isinstance(tgt_w, dict):
        return []
    tgt_by = {strip(k, tgt_prefix): v for k, v in tgt_w.items()}
    out = []
    for name, r in ref_w.items():
        name = strip(name, ref_prefix)
        mod, _, leaf = name.rpartition(".")
        mapped = f"{rename(mod, mapping)}.{leaf}" if mod else name
        t = tgt_by.get(mapped)
        if not isinstance(r, dict) or not isinstance(t, dict) or r.get("changed") or t.get("changed"):
            continue
        why = _differs(r, t)
        if why:
            out.append({"name": name, "reason": f"weights differ: {name}: {why}"})
    return out
