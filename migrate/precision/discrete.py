"""Discrete decisions that flip: an integer tensor computed from floats (an MoE router's
top-k experts, an argmax) may differ between two honest runs when two scores are within
rounding of each other. What follows inside the deciding module's parent then differs by
construction (another expert ran) on the rows (tokens) whose decision flipped, not by a
fault.

So a differing integer output is a warning. Failing outputs inside its parent module
(from that point to the parent's own output, in execution order) and the parent's output
are judged again on the rows whose decision did not flip, when their leading axes line up
with the decision's rows (an MoE block's (batch, seq, hidden) output against its router's
(batch * seq, top_k) indices): failing there is a failure ("on the 63 of 64 rows whose
decision did not flip: ..."), passing there a warning that names the flip. Tensors whose
rows do not line up (an expert's gathered tokens) are warnings. Everything after the
parent's output is judged as usual; a fault upstream still fails on the float tensors that
fed the decision (the router's logits). compare and replay both judge so.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

_INTS = ("int8", "int16", "int32", "int64", "uint8", "bool")

# (entry) -> (reference array, target array, thresholds) or None when not loadable
Arrays = Callable[[dict[str, Any]], tuple[Any, Any, dict] | None]


def _scope(name: str) -> str:
    parent = name.rpartition(".")[0]
    return parent or "<root>"


def _inside(name: str, scope: str) -> bool:
    return scope == "<root>" or name == scope or name.startswith(scope + ".")


def _is_flip(e: dict[str, Any]) -> bool:
    return (
        e["status"] == "fail"
        and e["dtype"] in _INTS
        and e["ref_dtype"] in _INTS
        and "shape" not in e["reason"]
        and e["kind"] == "forward.output"
    )


def flipped_rows(ref: Any, tgt: Any) -> Any:
    """Boolean per row of a decision (its last axis holds one row's choices, e.g. top-k
    indices; a 1-D decision is one choice per row): True where the set of choices differs."""
    import numpy as np

    a, b = np.asarray(ref), np.asarray(tgt)
    if a.ndim < 2:
        return a.reshape(-1) != b.reshape(-1)
    a, b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    return np.any(np.sort(a, axis=-1) != np.sort(b, axis=-1), axis=-1)


def _rows(x: Any, n: int) -> Any | None:
    """``x`` as ``(n, -1)`` when a prefix of its axes has ``n`` elements, else None."""
    size = 1
    for k, dim in enumerate(x.shape):
        size *= dim
        if size == n:
            return x.reshape(n, int(math.prod(x.shape[k + 1 :])))
        if size > n:
            return None
    return None


def _rejudge(e: dict[str, Any], mask: Any, arrays: Arrays | None) -> tuple[str, str] | None:
    """``(status, reason)`` of ``e`` on the rows whose decision did not flip, or None."""
    from migrate.precision.judge import judge, tensor_metrics

    got = arrays(e) if arrays is not None and mask is not None and e["kind"] == "forward.output" else None
    if got is None:
        return None
    ref, tgt, th = got
    a, b = _rows(ref, len(mask)), _rows(tgt, len(mask))
    keep = ~mask
    if a is None or b is None or not keep.any():
        return None
    m = tensor_metrics(a[keep], b[keep], th, (e["ref_dtype"], e["dtype"]))  # numpy or torch
    status, reason = judge(m, th)
    head = f"on the {int(keep.sum())} of {len(mask)} rows whose decision did not flip"
    if status == "pass" or not reason:
        cos, rel = m.get("cosine", math.nan), m.get("rel_err", math.nan)
        return status, f"{head} they pass (cosine {cos:.6f}, rel_err {rel:.3g})"
    return status, f"{head}: {reason}"


def soften_flips(entries: list[dict[str, Any]], arrays: Arrays | None = None) -> list[dict[str, Any]]:
    """Entries after a flipped decision judged as the module docstring says (in place;
    returned). Without ``arrays`` (or when a tensor cannot be loaded) they are warnings."""
    scope, flip, mask = None, "", None
    for e in entries:
        if scope is not None:
            if not _inside(e["name"], scope):
                scope = None
            elif e["status"] in ("fail", "missing"):
                again = _rejudge(e, mask, arrays) if e["status"] == "fail" else None
                if again is not None and again[0] == "fail":
                    e["reason"] = f"{again[1]} (a discrete decision flipped: {flip})"
                else:
                    e["status"] = "warn"
                    why = f"; {again[1]}" if again is not None else ""
                    e["reason"] = f"{e['reason']} (after a discrete decision flipped: {flip}{why})"
                if e["name"] == scope and e["kind"] == "forward.output":
                    scope = None
                continue
            elif e["name"] == scope and e["kind"] == "forward.output":
                scope = None
                continue
        if _is_flip(e):
            flip = f"{e['name']}#{e['call']} [{e['index']}]"
            got = arrays(e) if arrays is not None else None
            mask = flipped_rows(got[0], got[1]) if got is not None else None
            rows = f", {int(mask.sum())} of {len(mask)} rows" if mask is not None else ""
            e["status"] = "warn"
            e["reason"] = f"integer output differs (a decision flipped{rows}): {e['reason']}"
            scope = _scope(e["name"])
    return entries
