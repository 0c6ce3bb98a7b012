"""CLI: `migrate sensitivity` - which layers can't take a lower precision (fp16, bf16,
HF32, int8/int4), ranked, and the files that keep them in high precision.

Exit codes: 0 done (the keep set brings the lowered model within the limit), 1 no keep
set does (even keeping every measured unit), 2 usage error, or --keep-out files that
cannot be written completely (no ONNX export worked, or a kept unit has no node in the
graph): then none is written and one line on stderr says why."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from migrate.commands.output import emit

# What --keep-out writes (precision/sensitivity/emit.py): checked before any work.
KEEP_FILES = ("keep_dtype.cfg", "modify_mixlist.json", "autocast_exclude.py", "quant_skip.txt", "model.onnx")


def _progress(done: int, total: int, unit: str, eta: float) -> None:
    sys.stderr.write(f"\r[{done}/{total}] {unit[:60]:<60} about {eta:5.0f} s left")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


# The options whose help takes more than a line, as aliases (the signature stays short).
_Model = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="MOD:FN: model, example batch; a dict spec may add 'calibration' and 'loss'.",
    ),
]
_MaxRelErr = Annotated[
    float | None,
    typer.Option(
        "--max-rel-err",
        help="Limit for the lowered model (default: the gate's rel_err_max "
        "of the format's class; 0.05 for int formats).",
    ),
]
_KeepOut = Annotated[
    Path | None,
    typer.Option(
        "--keep-out",
        help="Write keep_dtype.cfg, modify_mixlist.json, autocast_exclude.py, "
        "quant_skip.txt and model.onnx here.",
    ),
]
_Onnx = Annotated[
    Path | None,
    typer.Option(
        "--onnx",
        help="With --keep-out: name the nodes of this ONNX file (the model exported "
        "already) instead of exporting it.",
    ),
]


def _check_arguments(
    model: str,
    out_format: str,
    max_units: int | None,
    max_rel_err: float | None,
    keep_out: Path | None,
    onnx: Path | None,
    output: Path | None,
    gate: Path | None,
) -> object | None:
    """Usage errors, every file the command writes checked against its inputs, and the
    --onnx graph loaded (None without --onnx), before any work."""
    from migrate.core.errors import UsageError
    from migrate.core.model_spec import spec_files
    from migrate.core.outputs import check_output

    if out_format not in ("text", "json"):
        raise UsageError(f"--format must be text or json, got {out_format!r}")
    if max_units is not None and max_units < 1:
        raise UsageError("--max-units must be at least 1")
    if max_rel_err is not None and not 0 < max_rel_err < 1e6:
        raise UsageError("--max-rel-err must be a positive number")
    if keep_out is not None and keep_out.exists() and not keep_out.is_dir():
        raise UsageError(f"--keep-out {keep_out}: exists and is not a folder")
    inputs = [*spec_files(model), *(p for p in (gate, onnx) if p is not None)]
    check_output(output, "-o", inputs)
    if onnx is not None and keep_out is None:
        raise UsageError("--onnx names the nodes of --keep-out's files: give --keep-out too")
    graph = None
    if onnx is not None:
        from migrate.core.inputs import input_path
        from migrate.ops.onnx_load import load_graph

        graph = load_graph(input_path(onnx, "--onnx"))
    for name in (KEEP_FILES[:-1] if onnx else KEEP_FILES) if keep_out is not None else ():
        assert keep_out is not None
        check_output(keep_out / name, "--keep-out", [*inputs, *([output] if output else [])])
    return graph


def sensitivity_cmd(
    model: _Model,
    fmt: Annotated[str, typer.Option("--to", help="fp16, bf16, hf32, int8 or int4.")] = "bf16",
    unit: Annotated[str, typer.Option("--unit", help="module, type or op.")] = "module",
    granularity: Annotated[
        str, typer.Option("--granularity", help="int formats: tensor, channel or group.")
    ] = "channel",
    group: Annotated[int, typer.Option("--group-size", help="int formats, group size.")] = 128,
    activations: Annotated[
        bool, typer.Option("--activations", help="int formats: also quantize each unit's inputs (int8).")
    ] = False,
    max_units: Annotated[
        int | None, typer.Option("--max-units", help="Measure at most N units (in model order).")
    ] = None,
    max_rel_err: _MaxRelErr = None,
    keep_out: _KeepOut = None,
    onnx: _Onnx = None,
    out_format: Annotated[str, typer.Option("--format", "-f", help="text or json.")] = "text",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Report file.")] = None,
    gate: Annotated[Path | None, typer.Option("--gate", help="Thresholds YAML.")] = None,
) -> None:
    """Lower one unit at a time to a format, rank units by end-to-end effect, and emit
    what keeps the sensitive ones in high precision (docs/precision.md §6)."""
    from migrate.precision.runner import prepare_spec
    from migrate.precision.sensitivity import run_sensitivity
    from migrate.precision.sensitivity.formats import parse_format
    from migrate.precision.sensitivity.report import render_json, render_text
    from migrate.precision.thresholds import load_gate

    graph = _check_arguments(model, out_format, max_units, max_rel_err, keep_out, onnx, output, gate)
    target = parse_format(fmt, granularity, group, activations)
    got = prepare_spec(model)
    report = run_sensitivity(
        got.model,
        got.calibration,
        target,
        unit,
        loss=got.loss,
        gate=load_gate(gate),
        max_units=max_units,
        max_rel_err=max_rel_err,
        keep_out=keep_out,
        progress=_progress,
        model_name=model,
        onnx_file=graph,
        onnx_name=None if onnx is None else str(onnx),
    )
    import torch

    report["torch"] = torch.__version__
    text = render_json(report) if out_format == "json" else render_text(report)
    emit(text, output)
    error = report.get("files", {}).get("error")
    if error:
        from migrate.core.display import escape

        sys.stderr.write(escape(f"error: --keep-out {keep_out}: {error}") + "\n")
        raise typer.Exit(2)
    raise typer.Exit(0 if report["keep"]["within_limit"] else 1)


def register(app: typer.Typer) -> None:
    app.command("sensitivity")(sensitivity_cmd)
