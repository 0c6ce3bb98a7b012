"""CLI: `migrate run --emulate npu -- COMMAND...` (run a program on an emulated NPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from migrate.core.errors import UsageError

EMULATED = ("npu",)


def run_cmd(
    ctx: typer.Context,
    emulate: Annotated[str, typer.Option("--emulate", help="Device to emulate on the CPU: npu.")] = "npu",
    report: Annotated[Path | None, typer.Option("--report", help="Write the JSON report to FILE.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="Report on stderr: text|json|none.")] = "text",
    target: Annotated[str | None, typer.Option("--target", help="torch_npu==X.Y.Z registry.")] = None,
    kill_after: Annotated[
        float | None,
        typer.Option(
            "--kill-after",
            min=0,
            help="Seconds the program has to end after a SIGTERM/SIGHUP/SIGQUIT passed on to it,"
            " then it is killed (default 10).",
        ),
    ] = None,
) -> None:
    """Run COMMAND (python train.py ..., python -m pkg, torchrun, pytest, a console script) as
    if on an Ascend NPU, on the CPU; report ops without NPU kernels, weak dtypes, host syncs.

    Exit code: the program's own (2 for a usage error of migrate run itself).
    """
    from migrate.emulate.report import render_text
    from migrate.emulate.runner import check_report, run, write

    if emulate not in EMULATED:
        raise UsageError(f"--emulate must be one of {', '.join(EMULATED)}, got {emulate!r}")
    if fmt not in ("text", "json", "none"):
        raise UsageError(f"--format must be text, json or none, got {fmt!r}")
    if target:
        from migrate.ops.registry import load_aten

        load_aten(target)
    check_report(report, list(ctx.args))  # before the program starts, not after it ran
    result = run(list(ctx.args), target, kill_after=kill_after)
    from migrate.perf.emulated import performance_section, render_section

    result["performance"] = performance_section(result)
    if report is not None:
        try:
            write(result, report)
        except UsageError as exc:  # the run happened: its exit status still tells how it went
            typer.echo(f"migrate: error: {exc}", err=True)
            raise typer.Exit(result["exit_code"] or 2) from None
    if fmt == "text":
        typer.echo(render_text(result, render_section(result["performance"])), err=True)
    elif fmt == "json":
        import json

        typer.echo(json.dumps(result, indent=2), err=True)
    raise ProgramExit(result["exit_code"])


class ProgramExit(SystemExit):
    """`migrate run` ends with the program's exit status (128+N for a signal): not an
    interruption of migrate itself, whatever the number."""


def register(app: typer.Typer) -> None:
    app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(run_cmd)
