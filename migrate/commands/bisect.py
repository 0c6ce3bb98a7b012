"""CLI: `migrate bisect` - which torch_npu fused op call changes a ported model's result.

Runs the ``MOD:FN`` model as ported, then with its fused calls swapped back to their
native compositions (or run in float32) one kind, one call site, then half of the calls
at a time (migrate/precision/fused_bisect.py). Without torch_npu installed, ``import
torch_npu`` in the model's code gets the emulator's (`migrate run --emulate npu`).

Exit codes: 0 no fused call changes the result, 1 one does (the culprit is named), 2 usage
error or no fused op called.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from migrate.commands.output import emit


def _fmt(value, spec: str = ".3g") -> str:
    return "-" if value is None else format(value, spec)


def render_text(r: dict) -> str:
    lines = []
    culprit = r["culprit"]
    if culprit:
        calls = (
            "every call"
            if len(culprit["calls"]) == culprit["of"]
            else f"call{'s' if len(culprit['calls']) > 1 else ''} "
            + ", ".join(str(c) for c in culprit["calls"])
        )
        lines.append(
            f"FAIL culprit: {culprit['op']} at {culprit['site']} ({calls} of "
            f"{culprit['of']}): {culprit['reason']}"
        )
        if culprit["also"]:
            lines.append(f"     also differing: {', '.join(culprit['also'][:5])}")
        lines.append(
            f"     swapping {culprit['op']} back to its {r['swap']} form moves the "
            f"model's output by rel_err {_fmt(culprit['rel_err'])} "
            f"({'past' if culprit['changes_result'] else 'within'} the gate)"
        )
    elif r["calls"]:
        lines.append(
            f"PASS no fused call changes the result (every call swapped to its "
            f"{r['swap']} form: rel_err {_fmt((r['all'] or {}).get('rel_err'))})"
        )
    lines.append("fused calls (op, site, calls, differing from their composition on their own inputs):")
    for row in r["calls"]:
        lines.append(
            f"  {row['op']:<24} {row['site']}  {row['calls']} call(s), "
            f"{row['differ']} differ (worst rel_err {_fmt(row['worst_rel_err'])})"
        )
    if r["ops"]:
        lines.append("each op swapped alone, effect on the output:")
        for row in r["ops"]:
            lines.append(
                f"  {row['status'].upper():<4} {row['op']:<24} rel_err "
                f"{_fmt(row['rel_err'])} cosine {_fmt(row['cosine'], '.6f')}"
            )
    lines.append(f"{r['runs']} forward runs, torch {r.get('torch', '?')}")
    return "\n".join(lines) + "\n"


def bisect_cmd(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="MOD:FN returning (model, args[, kwargs]); a dict spec may add 'calibration'.",
        ),
    ],
    dtype: Annotated[
        str | None, typer.Option("--dtype", help="Cast model and floating inputs (fp16, bf16, ...).")
    ] = None,
    swap: Annotated[
        str,
        typer.Option(
            "--swap",
            help="native: each fused call's plain-torch composition; fp32: the same "
            "fused op on float32 inputs.",
        ),
    ] = "native",
    gate: Annotated[Path | None, typer.Option("--gate", help="Thresholds YAML.")] = None,
    out_format: Annotated[str, typer.Option("--format", "-f", help="text or json.")] = "text",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Report file.")] = None,
) -> None:
    """Name the torch_npu fused op call that changes a ported model's result."""
    from migrate.core.errors import UsageError

    if out_format not in ("text", "json"):
        raise UsageError(f"--format must be text or json, got {out_format!r}")
    from migrate.core.model_spec import spec_files
    from migrate.core.outputs import check_output

    check_output(output, "-o", [*spec_files(model), *(p for p in (gate,) if p is not None)])
    _torch_npu()
    from migrate.precision.fused_bisect import bisect_fused
    from migrate.precision.runner import prepare_spec
    from migrate.precision.thresholds import load_gate

    got = prepare_spec(model, dtype=dtype)
    report = bisect_fused(
        got.model,
        got.calibration,
        emulated_fused_ops(),
        gate=load_gate(gate),
        swap=swap,
        progress=lambda text: print(f"bisect: {text}", file=sys.stderr),
    )
    import torch

    report["torch"] = torch.__version__
    text = json.dumps(report, indent=1) + "\n" if out_format == "json" else render_text(report)
    emit(text, output)
    if not report["calls"]:
        raise UsageError(
            f"{model}: no torch_npu fused op was called (known: "
            "torch_npu.npu_* and their emulated references)"
        )
    raise typer.Exit(1 if report["culprit"] else 0)


def emulated_fused_ops() -> list:
    """The fused ops with a native composition: the emulator's reference implementations
    (migrate/emulate/fused, one per op, following the op's documentation)."""
    from migrate.emulate.fused import FUSED
    from migrate.precision.fused_bisect import FusedOp

    return [FusedOp(name, FUSED[name].reference, (FUSED[name],)) for name in sorted(FUSED)]


def _torch_npu() -> None:
    """``import torch_npu`` works: the real one, else the emulator's (on the CPU)."""
    import importlib.util

    if importlib.util.find_spec("torch_npu") is not None:
        return
    from migrate.emulate import backend, surface

    backend.install()
    surface.install_finder()


def register(app: typer.Typer) -> None:
    app.command("bisect")(bisect_cmd)
