"""CLI: `migrate dump`, `migrate compare`, `migrate replay` (precision alignment).

torch and safetensors are imported inside the commands only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from migrate.commands.output import emit
from migrate.core.errors import UsageError
from migrate.core.inputs import check_glob
from migrate.core.outputs import check_output

FORMATS = ("text", "json", "html", "junit", "markdown")


def _emit(result, fmt: str, output: Path | None) -> None:
    from migrate.precision.report import RENDERERS

    if fmt not in RENDERERS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    emit(RENDERERS[fmt](result), output)
    if output is not None and fmt != "text":
        from migrate.precision.report.text import locus_line, summary_line

        typer.echo(f"{summary_line(result)}\n{locus_line(result)}")


Spec = Annotated[str, typer.Option("--model", "-m", help="MOD:FN returning (model, args[, kwargs]).")]
Device = Annotated[str, typer.Option("--device", help="cpu, cuda or npu.")]
DType = Annotated[str | None, typer.Option("--dtype", help="Cast model and floating inputs.")]
GateOpt = Annotated[Path | None, typer.Option("--gate", help="Thresholds YAML.")]
ProfileOpt = Annotated[
    str | None, typer.Option("--profile", help="ascend (default: TF32/HF32 runs judged as such) or strict.")
]
Fmt = Annotated[str, typer.Option("--format", "-f", help="text|json|html|junit|markdown")]
Out = Annotated[Path | None, typer.Option("--output", "-o", help="Write the report to FILE.")]
Reduced = Annotated[
    str | None,
    typer.Option(
        "--reduced-fp32",
        help="What fp32 matmuls/convolutions really ran in, when the flags "
        "cannot show it (emulation, another process): none, hf32, tf32, hf32-conv, tf32-conv.",
    ),
]


def dump_cmd(
    model: Spec,
    output: Annotated[Path, typer.Option("--output", "-o", help="Dump directory to write.")],
    device: Device = "cpu",
    dtype: DType = None,
    stats_only: Annotated[bool, typer.Option("--stats-only", help="No tensors.")] = False,
    inputs: Annotated[bool, typer.Option("--inputs", help="Record forward inputs.")] = False,
    grads: Annotated[bool, typer.Option("--grads", help="Record gradients.")] = False,
    params: Annotated[bool, typer.Option("--params", help="Record module parameters.")] = False,
    apis: Annotated[
        bool, typer.Option("--apis", help="Also record every torch function called inside each module.")
    ] = False,
    include: Annotated[list[str] | None, typer.Option("--include", help="Module glob.")] = None,
    exclude: Annotated[list[str] | None, typer.Option("--exclude", help="Module glob.")] = None,
    shard_mb: Annotated[int, typer.Option("--shard-mb", help="Shard size in MiB.")] = 64,
    reduced: Reduced = None,
) -> None:
    """Run the model once with hooks on every module and write a dump directory.

    With --grads, the spec's loss (a dict spec's 'loss') is backpropagated; without one, a
    fixed random projection of the outputs."""
    from migrate.precision.dumper import check_out_dir, dump
    from migrate.precision.runner import backward_from, prepare_spec, resolve_reduced

    check_out_dir(output)
    for flag, globs in (("--include", include), ("--exclude", exclude)):
        for glob in globs or []:
            check_glob(glob, flag)
    if shard_mb < 1:  # 0 or less: every tensor its own shard, or a negative shift
        raise UsageError(f"--shard-mb {shard_mb}: must be at least 1")
    declared = resolve_reduced(reduced)
    got = prepare_spec(model, device, dtype)
    import torch

    with dump(
        got.model,
        output,
        inputs=inputs,
        grads=grads,
        params=params,
        stats_only=stats_only,
        apis=apis,
        include=include,
        exclude=exclude,
        shard_bytes=shard_mb << 20,
        meta={"spec": model},
        precision=declared,
    ) as d:
        with torch.set_grad_enabled(grads):
            out = got.model(*got.args, **got.kwargs)
            if grads:
                backward_from(out, got.loss)
    typer.echo(f"wrote {len(d.records)} records to {d.out_dir}")


def compare_cmd(
    ref: Annotated[Path, typer.Argument(metavar="REF_DIR", help="Reference dump directory.")],
    tgt: Annotated[Path, typer.Argument(metavar="TGT_DIR", help="Target dump directory.")],
    gate: GateOpt = None,
    mapping: Annotated[Path | None, typer.Option("--mapping", help="Module renames.")] = None,
    profile: ProfileOpt = None,
    fmt: Fmt = "text",
    output: Out = None,
) -> None:
    """Align two dumps, compute metrics, name the first divergence, apply the gate."""
    from migrate.precision.compare import compare_dumps
    from migrate.precision.manifest import dump_files

    check_output(
        output, "-o", [*dump_files(ref), *dump_files(tgt), *(p for p in (gate, mapping) if p is not None)]
    )
    result = compare_dumps(ref, tgt, gate=gate, mapping=mapping, profile=profile)
    _emit(result, fmt, output)
    raise typer.Exit(0 if result else 1)


def replay_cmd(
    model: Spec,
    ref: Annotated[Path, typer.Option("--ref", help="Reference dump made with --inputs.")],
    device: Device = "cpu",
    dtype: DType = None,
    gate: GateOpt = None,
    profile: ProfileOpt = None,
    fmt: Fmt = "text",
    output: Out = None,
    reduced: Reduced = None,
    apis: Annotated[
        bool | None,
        typer.Option(
            "--apis/--no-apis",
            help="Judge every torch call inside each module (default: when "
            "the reference was dumped with --apis).",
        ),
    ] = None,
) -> None:
    """Feed each module its reference inputs; name the module (and with --apis the torch
    call) that introduces error.

    A reference dumped with --grads has the target's gradients checked by one forward and
    backward (the spec's loss): they are not replayed, so a failing one is named as the lead
    and fails the replay.

    Exit codes: 0 no culprit and every check passed, 1 culprit named or gradients fail,
    2 inconclusive (reason on stderr)."""
    from migrate.core.model_spec import spec_files
    from migrate.precision.manifest import dump_files
    from migrate.precision.replay import replay_model
    from migrate.precision.runner import prepare_spec, resolve_device, resolve_dtype, resolve_reduced

    check_output(output, "-o", [*dump_files(ref), *spec_files(model), *(p for p in (gate,) if p is not None)])
    declared = resolve_reduced(reduced)
    got = prepare_spec(model, device, dtype)
    result = replay_model(
        got.model,
        ref,
        gate=gate,
        device=resolve_device(device),
        dtype=resolve_dtype(dtype),
        args=got.args,
        kwargs=got.kwargs,
        profile=profile,
        precision=declared or None,
        apis=apis,
        loss=got.loss,
    )
    _emit(result, fmt, output)
    if result.inconclusive:
        typer.echo(f"migrate replay: inconclusive: {result.inconclusive}", err=True)
        raise typer.Exit(2)
    raise typer.Exit(0 if result.passed else 1)


def register(app: typer.Typer) -> None:
    app.command("dump")(dump_cmd)
    app.command("compare")(compare_cmd)
    app.command("replay")(replay_cmd)
