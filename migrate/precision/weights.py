"""Compare the per-tensor weight tables of two dumps (digest.weight_table): a weight that
differs is a root cause, reported before any activation.

Same dtype: the CRC32 must match. Different dtypes (an fp32 reference, a bf16 target): the
weight's relative error, estimated from the two sketches, must stay within two unit
roundoffs of the less precise dtype - what a cast can do, and far less than a fault.
"""

from __future__ import annotations

from typing import Any

from migrate.precision import sketch
from migrate.precision.align import Mapping, rename, strip

UNIT_ROUNDOFF = {"bfloat16": 2.0 ** -8, "float16": 2.0 ** -11, "float32": 2.0 ** -24,
                 "float64": 2.0 ** -53}


def _cast_limit(a: str, b: str) -> float | None:
    ua, ub = UNIT_ROUNDOFF.get(a), UNIT_ROUNDOFF.get(b)
    if ua is None or ub is None:
        return None
    return 2.0 * max(ua, ub)


def _differs(r: dict, t: dict) -> str | None:
    if list(r.get("shape", [])) != list(t.get("shape", [])):
        return f"shape {r.get('shape')} vs {t.get('shape')}"
    if r.get("dtype") == t.get("dtype"):
        return None if r.get("crc") == t.get("crc") else "bytes differ (checksum)"
    limit = _cast_limit(r.get("dtype", ""), t.get("dtype", ""))
    a, b = sketch.decode(r.get("sketch")), sketch.decode(t.get("sketch"))
    if limit is None or a is None or b is None or not r.get("norm"):
        return None
    rel = sketch.diff_norm(a, b) / float(r["norm"])
    if rel > limit:
        return (f"relative error {rel:.3g} ({r['dtype']} vs {t['dtype']}; a cast gives at "
                f"most {limit:.2g})")
    return None


def compare_weights(ref_meta: dict, tgt_meta: dict, mapping: Mapping,
                    tgt_prefix: str = "") -> list[dict[str, Any]]:
    """``[{name, reason}]`` for every weight present in both dumps that differs."""
    ref_w, tgt_w = ref_meta.get("weights"), tgt_meta.get("weights")
    if not isinstance(ref_w, dict) or not isinstance(tgt_w, dict):
        return []
    tgt_by = {strip(k, tgt_prefix): v for k, v in tgt_w.items()}
    out = []
    for name, r in ref_w.items():
        mod, _, leaf = name.rpartition(".")
        mapped = f"{rename(mod, mapping)}.{leaf}" if mod else name
        t = tgt_by.get(mapped)
        if not isinstance(r, dict) or not isinstance(t, dict):
            continue
        why = _differs(r, t)
        if why:
            out.append({"name": name, "reason": f"weights differ: {name}: {why}"})
    return out
