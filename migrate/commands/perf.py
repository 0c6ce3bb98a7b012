"""CLI: `migrate perf` - why a ported run is slow, from its profiles.

Reads Ascend PyTorch Profiler results (``*_ascend_pt`` folders, the .db export),
torch.profiler (Kineto) traces and msprof-analyze cluster output; reports per rank and step
the breakdown (computing, communication not overlapped, free), the top operators, findings
with evidence, saving, fix and source lines, MFU, and GPU/NPU side by side with ``--ref``.

Exit codes: 0 done (no --fail-on condition met), 1 a --fail-on condition is met, 2 usage
error or an unreadable profile.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from migrate.commands.output import emit


def _progress_printer(enabled: bool):
    if not enabled:
        return None

    def show(what: str, done: int, total: int) -> None:
        sys.stderr.write(f"\rperf: {what} {done}/{total}")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


def perf_cmd(
    paths: Annotated[list[Path], typer.Argument(help="Profile folders or files (one run; several ranks).")],
    ref: Annotated[
        list[Path] | None,
        typer.Option("--ref", help="The reference run's profiles (the CUDA run), side by side."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="MOD:FN whose FLOPs per step give MFU (forward and backward)."),
    ] = None,
    flops: Annotated[float | None, typer.Option("--flops", help="Model FLOPs per step, for MFU.")] = None,
    chip: Annotated[
        str | None,
        typer.Option("--chip", help="The chip, where the profile does not say (Ascend910B3, A100 ...)."),
    ] = None,
    ref_chip: Annotated[str | None, typer.Option("--ref-chip", help="The reference run's chip.")] = None,
    dtype: Annotated[
        str | None,
        typer.Option("--dtype", help="Compute dtype for the chip's peak: bf16, fp16, fp32, hf32, int8."),
    ] = None,
    fail_on: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-on",
            help="Gate: free=0.3, exposed=0.1, mfu=0.35, regression=0.1, or a finding ID/name/kind.",
        ),
    ] = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", help="Worker processes for the ranks (default: CPUs).")
    ] = None,
    out_format: Annotated[str, typer.Option("--format", "-f", help="text, json, markdown or html.")] = "text",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Report file.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")] = False,
) -> None:
    """Why the ported run is slow: step breakdown, top operators, findings, MFU, compare."""
    from migrate.core.errors import UsageError
    from migrate.core.outputs import check_output
    from migrate.perf.render import FORMATS, render
    from migrate.perf.run import PerfRequest, analyze

    if out_format not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, got {out_format!r}")
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    if flops is not None and not (flops > 0 and flops < float("inf")):
        raise UsageError(f"--flops must be a positive number, got {flops}")
    from migrate.core.inputs import require_path

    paths = [require_path(p, "a profile path") for p in paths]
    refs = [require_path(p, "--ref") for p in ref or []]
    check_output(output, "-o", [*paths, *refs])
    from migrate.perf.analyze.gate import parse_fail_on

    request = PerfRequest(
        paths,
        refs,
        jobs=jobs,
        model=model,
        flops=flops,
        chip=chip,
        ref_chip=ref_chip,
        dtype=dtype,
        fail_on=parse_fail_on(fail_on or []),
    )
    report = analyze(request, _progress_printer(not quiet and sys.stderr.isatty()))
    emit(render(report, out_format), output)
    if not report:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("perf")(perf_cmd)
