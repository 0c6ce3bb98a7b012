"""The `migrate replay` command that follows a comparison's first divergence.

The first divergence is where an error first crosses a threshold, often a child or a later
module of the one whose own code made it; replay feeds each module the reference's inputs
and names that module. The command is built from the two dumps' metadata: the target's
``MOD:FN`` spec, device, dtype and declared ``--reduced-fp32`` (``migrate dump`` records
them), and the reference folder (of the diverging rank).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float64": "fp64"}


def _reduced(precision: dict[str, Any]) -> str | None:
    """The ``--reduced-fp32`` value a dump's declared precision came from."""
    if precision.get("source") != "declared":
        return None
    matmul, conv = precision.get("matmul"), precision.get("conv")
    if conv in ("hf32", "tf32"):
        return conv if matmul == conv else f"{conv}-conv"
    return "none"


def replay_command(ref_meta: dict[str, Any], tgt_meta: dict[str, Any], ref_dir: str | Path) -> str:
    """``migrate replay --model ... --ref ...`` for the target of a comparison."""
    precision = tgt_meta.get("precision") or {}
    parts = ["migrate", "replay", "--model", tgt_meta.get("spec") or "MOD:FN", "--ref", str(ref_dir)]
    device = str(precision.get("device") or tgt_meta.get("device") or "cpu").partition(":")[0]
    if device != "cpu":
        parts += ["--device", device]
    dtype = _DTYPES.get(str(precision.get("param_dtype") or tgt_meta.get("dtype")))
    if dtype:
        parts += ["--dtype", dtype]
    reduced = _reduced(precision)
    if reduced:
        parts += ["--reduced-fp32", reduced]
    command = " ".join(shlex.quote(p) for p in parts)
    if not tgt_meta.get("spec"):
        command += "  (MOD:FN: the function that builds the target model and its inputs)"
    if not (ref_meta.get("inputs") and not ref_meta.get("stats_only")):
        command += f"  (after re-dumping {shlex.quote(str(ref_dir))} with --inputs: replay feeds them)"
    return command


def divergence_context(first: dict[str, Any], entries: list[dict[str, Any]]) -> str:
    """Why the first divergence may not be the faulty module, from what ran around it: its
    submodules (they stay within the bands: its own code between them, or a fault below
    the bands in one of them) or, without any, its parent (whose code made its inputs)."""
    name = first["name"]
    if first.get("kind") != "forward.output" or name == "<root>":
        return ""
    kids = sorted(
        {e["name"] for e in entries if e["name"].startswith(name + ".") and e["kind"] == "forward.output"}
    )
    if kids:
        shown = ", ".join(kids[:3]) + (f" and {len(kids) - 3} more" if len(kids) > 3 else "")
        return (
            f"{name} has {len(kids)} submodule(s) within the bands ({shown}): the error is made by "
            "its own code between them, or by a submodule's fault below the bands"
        )
    parent = name.rpartition(".")[0]
    if parent:
        return f"{name} has no submodules: the error is made in it, or in its inputs by the code of {parent}"
    return ""


def replay_note(command: str, kind: str = "", context: str = "") -> str:
    """The note under a comparison's first divergence (of record ``kind``), with what is
    known of the modules around it (``context``: divergence_context)."""
    text = (
        "note: the first divergence is where the error first crosses a threshold, not "
        "necessarily the module whose own code is faulty"
        + (f" ({context})" if context else "")
        + "; to find that module, run: "
        + command
    )
    if kind.startswith("backward."):
        text += " (gradients are not replayed: it names the first failing ones as a lead)"
    return text
