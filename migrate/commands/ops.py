"""CLI: `migrate ops` (op coverage of an ONNX model or a PyTorch model) and `migrate decompose`."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated

import typer

from migrate.commands.output import emit
from migrate.core.errors import UsageError
from migrate.core.outputs import check_output


def _emit(text: str, output: Path | None) -> None:
    emit(text, output)


def _usage(exc: UsageError) -> typer.Exit:
    print(f"migrate: error: {exc}", file=sys.stderr)
    return typer.Exit(2)


Fmt = Annotated[str, typer.Option("--format", help="text, json or markdown.")]
Target = Annotated[
    str | None, typer.Option("--target", help="Registry version, e.g. torch_npu==2.14.0 (default: newest).")
]
Backend = Annotated[str, typer.Option("--backend", help="ONNX judge: atc or ort-cann.")]


def ops(
    model: Annotated[Path | None, typer.Argument(help="An ONNX model file.")] = None,
    torch_spec: Annotated[
        str | None, typer.Option("--torch", help="MOD:FN returning (model, args) or (model, args, kwargs).")
    ] = None,
    backend: Backend = "atc",
    target: Target = None,
    fmt: Fmt = "text",
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the report here.")] = None,
    device: Annotated[str, typer.Option("--device", help="Device to run the model on (--torch).")] = "cpu",
    dtype: Annotated[str | None, typer.Option("--dtype", help="Cast model and inputs (--torch).")] = None,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even if ops fail.")] = False,
    train: Annotated[
        bool,
        typer.Option("--train", help="Capture a training step: forward, backward, optimizer step (--torch)."),
    ] = False,
    soc: Annotated[
        str | None,
        typer.Option("--soc", help="Ascend chip whose kernel dtypes to check, e.g. ascend910b (ONNX)."),
    ] = None,
) -> None:
    """Op coverage: which operators of a model Ascend cannot run, and why."""
    from migrate.ops.render import render_census

    try:
        if (model is None) == (torch_spec is None):
            raise UsageError("give either MODEL.onnx or --torch MOD:FN")
        if torch_spec and backend != "atc":  # an ONNX judge: with --torch it was ignored
            raise UsageError("--backend applies to ONNX models, not to --torch")
        if torch_spec:
            from migrate.ops.aten.census import aten_census

            if soc:
                raise UsageError("--soc applies to ONNX models (ATC), not to --torch")
            from migrate.core.model_spec import spec_files

            check_output(output, "-o", spec_files(torch_spec))
            report = aten_census(torch_spec, target=target, device=device, dtype=dtype, train=train)
        else:
            if train:
                raise UsageError("--train applies to --torch MOD:FN, not to an ONNX model")
            from migrate.ops.onnx_census import census
            from migrate.ops.onnx_load import external_files, load_graph

            assert model is not None  # exactly one of MODEL and --torch (checked above)
            proto = load_graph(model)
            check_output(output, "-o", [model, *external_files(proto, model.parent, model)])
            report = census(model, backend=backend, target=target, soc=soc, model=proto)
        _emit(render_census(report, fmt), output)
    except UsageError as exc:
        raise _usage(exc) from None
    bad = sum(v for k, v in report["summary"].items() if k in ("unsupported", "cpu-fallback", "restricted"))
    raise typer.Exit(0 if exit_zero or not bad else 1)


def decompose(
    model: Annotated[Path, typer.Argument(help="The ONNX model to rewrite.")],
    out: Annotated[Path, typer.Option("-o", "--output", help="Where to write the rewritten model.")],
    backend: Backend = "atc",
    target: Target = None,
    atol: Annotated[float, typer.Option("--atol", help="Max abs error allowed per output.")] = 1e-5,
    inputs: Annotated[Path | None, typer.Option("--inputs", help=".npz of input arrays.")] = None,
    force: Annotated[
        str | None, typer.Option("--ops", help="Also rewrite these ops (comma list) even where supported.")
    ] = None,
    no_verify: Annotated[bool, typer.Option("--no-verify", help="Skip the onnxruntime check.")] = False,
    fmt: Fmt = "text",
    report_file: Annotated[Path | None, typer.Option("--report", help="Write the report here.")] = None,
) -> None:
    """Rewrite unsupported ONNX ops into supported ones and verify with onnxruntime."""
    from migrate.ops.decompose.run import run_decompose
    from migrate.ops.render import render_decompose

    try:
        if not (atol >= 0 and math.isfinite(atol)):  # an infinite tolerance cannot fail
            raise UsageError(f"--atol {atol}: want a finite number >= 0")
        forced = {s.strip() for s in force.split(",") if s.strip()} if force else set()
        _check_ops(force, forced)
        report, code = run_decompose(
            model, out, backend, target, atol, inputs, forced, verify=not no_verify, report=report_file
        )
        _emit(render_decompose(report, fmt), report_file)
    except UsageError as exc:
        raise _usage(exc) from None
    raise typer.Exit(code)


def _check_ops(given: str | None, ops: set[str]) -> None:
    """--ops names ONNX operators: an empty or unknown name is an error, not a no-op."""
    if given is not None and not ops:
        raise UsageError("--ops: no operator named")
    import onnx.defs

    unknown = sorted(op for op in ops if not onnx.defs.has(op))
    if unknown:
        from migrate.core.display import escape

        raise UsageError(f"--ops {escape(', '.join(unknown))[:200]}: not an ONNX operator")


def register(app: typer.Typer) -> None:
    app.command("ops")(ops)
    app.command("decompose")(decompose)
