"""CLI: `migrate doctor` — is this machine ready to run the port on an NPU; `--explain CODE`
and `--log FILE` — what a CANN / ACL / HCCL / torch_npu error means."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from migrate.commands.output import emit
from migrate.core.display import escape
from migrate.core.errors import UsageError

FORMATS = ("text", "json")


def _python(value: str | None) -> str:
    """The interpreter to probe: a file that can be executed, or a virtualenv folder."""
    if value is None:
        return sys.executable
    path = Path(value)
    if path.is_dir():
        path = path / "bin" / "python"
    if not path.is_file() or not os.access(path, os.X_OK):
        raise UsageError(f"--python {escape(value)}: not an executable Python interpreter")
    return str(path)


def _check_output(
    output: Path | None, log: list[str] | None, project: Path | None, python: str | None
) -> None:
    """Before any work: the report never overwrites a log it reads, the project's files or
    the interpreter it probes."""
    from migrate.core.outputs import check_output
    from migrate.scan.discover import read_by_scan

    read: list[Path] = [
        *(Path(p) for p in log or () if str(p) != "-"),
        *([project] if project is not None else []),
        *([Path(_python(python))] if python is not None else []),
    ]
    if output is not None and project is not None and read_by_scan(output, [project]):
        read.append(output)  # a requirement file of the project it checks
    check_output(output, "-o", read)


def _check_machine_options(timeout: float, root: Path, project: Path | None) -> None:
    """The options of a machine check (not of --explain / --log)."""
    if not 0 < timeout < float("inf"):  # NaN fails this too
        raise UsageError(f"--timeout {timeout:g}: must be more than 0 (and finite)")
    if not root.is_dir():
        raise UsageError(f"--root {escape(str(root))}: not a folder")
    if project is not None and not project.exists():
        raise UsageError(f"--project {escape(str(project))}: no such file or folder")
    if project is not None and not (project.is_dir() or project.is_file()):
        raise UsageError(f"--project {escape(str(project))}: not a folder or a regular file")


def doctor(
    python: Annotated[
        str | None,
        typer.Option(
            "--python",
            metavar="PATH",
            help="The interpreter that runs the training (a python executable or a "
            "virtualenv folder; default: this one).",
        ),
    ] = None,
    explain: Annotated[
        str | None,
        typer.Option(
            "--explain", metavar="CODE", help="Explain an error code (507015, EI0006, ERR00100) or message."
        ),
    ] = None,
    log: Annotated[
        list[str] | None,
        typer.Option(
            "--log",
            metavar="FILE",
            help="Find and explain the error codes and known messages in a log "
            "(a plog or training log; - for stdin). Repeatable.",
        ),
    ] = None,
    project: Annotated[
        Path | None,
        typer.Option(
            "--project", metavar="PATH", help="Also check the pins in this project's requirement files."
        ),
    ] = None,
    root: Annotated[
        Path,
        typer.Option(
            "--root",
            metavar="DIR",
            help="The host under test is this folder (a container image or chroot): every "
            "path checked, those the environment names included, is read under it and "
            "printed as the host names it.",
        ),
    ] = Path("/"),
    timeout: Annotated[
        float, typer.Option("--timeout", metavar="SECONDS", help="Seconds the import probe may take.")
    ] = 120.0,
    no_import: Annotated[
        bool, typer.Option("--no-import", help="Do not import torch / torch_npu (metadata and files only).")
    ] = False,
    fmt: Annotated[str, typer.Option("--format", metavar="FORMAT", help="text | json")] = "text",
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write the report to this file.")
    ] = None,
) -> None:
    """Check that this machine can run the port on an Ascend NPU, or explain an error."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt}: choose one of {', '.join(FORMATS)}")
    if explain is not None and log:
        raise UsageError("give --explain or --log, not both")
    _check_output(output, log, project, python)
    if explain is not None:
        raise typer.Exit(_explain(explain, fmt, output))
    if log:
        raise typer.Exit(_logs(log, fmt, output))
    _check_machine_options(timeout, root, project)
    from migrate.doctor.context import Options
    from migrate.doctor.report import render_text
    from migrate.doctor.run import run_doctor

    report = run_doctor(
        Options(_python(python), root=root, timeout=timeout, import_probe=not no_import, project=project)
    )
    if fmt == "json":
        text = json.dumps(report.to_json(), indent=2, ensure_ascii=False)
    else:
        text = render_text(report, color=output is None and sys.stdout.isatty())
    emit(text, output)
    raise typer.Exit(0 if report.ready else 1)


def _explain(arg: str, fmt: str, output: Path | None) -> int:
    """0: explained; 1: a well-formed code the table has no row for; 2 (UsageError): not a
    code and no known message in it."""
    from migrate.doctor.explain import explain_arg, explain_json, render_findings

    findings = explain_arg(arg)
    if fmt == "json":
        emit(json.dumps(explain_json(arg, findings), indent=2, ensure_ascii=False), output)
    else:
        emit(render_findings(findings), output)
    return 0 if all(f.explanation is not None for f in findings) else 1


DETAILED = 50  # findings of a log explained in full in the text report (JSON has all)


def _logs(paths: list[str], fmt: str, output: Path | None) -> int:
    """0: no error code or known message found; 1: findings (or a file that could not be
    read to the end); 2 (UsageError): a path that is not a readable regular file."""
    from migrate.doctor.explain import render_findings
    from migrate.doctor.logscan import MAX_FINDINGS, log_json, scan_logs

    scan = scan_logs(paths)
    if fmt == "json":
        emit(json.dumps(log_json(scan), indent=2, ensure_ascii=False), output)
    else:
        head = (
            f"{len(scan.findings)} finding(s) in {scan.lines} line(s) of "
            f"{', '.join(escape(p) for p in scan.paths)}"
            + (" (stopped at the size limit)" if scan.truncated else "")
        )
        shown = scan.findings[:DETAILED]
        body = render_findings(shown, head + "\n") if shown else head + "\n"
        rest = scan.findings[DETAILED:]
        if rest:
            keys = ", ".join(f.key for f in rest[:20]) + (", ..." if len(rest) > 20 else "")
            body += f"... and {len(rest)} more finding(s), not explained here: {keys}"
            body += " (--format json lists all)\n"
        if scan.dropped:
            body += (
                f"{scan.dropped} more line(s) held codes beyond the first {MAX_FINDINGS} distinct ones: "
                "not listed\n"
            )
        for err in scan.errors:
            body += f"{escape(err['path'])}: cannot read to the end: {err['message']}\n"
        emit(body, output)
    return 1 if scan.findings or scan.errors else 0


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
