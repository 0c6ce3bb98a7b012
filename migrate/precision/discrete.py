"""Discrete decisions that flip: an integer tensor computed from floats (an MoE router's
top-k experts, an argmax) may differ between two honest runs when two scores are within
rounding of each other. What follows inside the deciding module's parent then differs by
construction (another expert ran), not by a fault.

So a differing integer output is a warning, and failures inside its parent module (from
that point to the parent's own output, in execution order) become warnings that name the
flip; the parent's output and everything after it are judged as usual. A fault upstream
still fails on the float tensors that fed the decision (the router's logits).
"""

from __future__ import annotations

from typing import Any

_INTS = ("int8", "int16", "int32", "int64", "uint8", "bool")


def _scope(name: str) -> str:
    parent = name.rpartition(".")[0]
    return parent or "<root>"


def _inside(name: str, scope: str) -> bool:
    return scope == "<root>" or name == scope or name.startswith(scope + ".")


def soften_flips(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries with flipped-decision failures turned into warnings (in place; returned)."""
    scope, flip = None, ""
    for e in entries:
        if scope is not None:
            if not _inside(e["name"], scope):
                scope = None
            elif e["status"] in ("fail", "missing"):
                e["status"] = "warn"
                e["reason"] = f"{e['reason']} (after a discrete decision flipped: {flip})"
                if e["name"] == scope and e["kind"] == "forward.output":
                    scope = None
                continue
        if (
            e["status"] == "fail"
            and e["dtype"] in _INTS
            and e["ref_dtype"] in _INTS
            and "shape" not in e["reason"]
            and e["kind"] == "forward.output"
        ):
            flip = f"{e['name']}#{e['call']} [{e['index']}]"
            e["status"] = "warn"
            e["reason"] = f"integer output differs (a decision flipped): {e['reason']}"
            scope = _scope(e["name"])
    return entries
