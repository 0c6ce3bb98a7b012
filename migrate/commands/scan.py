"""CLI: `migrate scan PATH...` — the gap report."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from migrate.commands.output import emit
from migrate.commands.progress import cli_request, scan_with_config
from migrate.core.cache_files import default_cache_dir
from migrate.core.errors import UsageError
from migrate.core.findings import CATEGORY_RANK, ScanResult
from migrate.scan.run_memo import Recording
from migrate.scan.session import ScanRequest, Session

FORMATS = ("text", "json", "sarif", "markdown", "github")


def failed(result: ScanResult, fail_on: str) -> bool:
    """Exit 1: a finding at or above ``fail_on`` (perf advice only with ``--fail-on perf``),
    or any file error (a file that could not be read or parsed may hide findings; see
    docs/contracts.md §2)."""
    threshold = CATEGORY_RANK[fail_on]
    return bool(result.errors) or any(
        CATEGORY_RANK[f.category] >= threshold for f in result.findings if not f.npu_aware
    )  # code that handles NPU needs no work


FAIL_ON = ("perf", "auto", "assisted", "manual")


def _check_output(output: Path | None, paths: list[Path], config: Path | None) -> None:
    """-o never overwrites what the scan reads (a scanned file, the config)."""
    if output is None:
        return
    from migrate.core.outputs import check_output
    from migrate.scan.discover import read_by_scan

    read = [p for p in [*paths, config] if p is not None]
    check_output(output, "-o", read + ([output] if read_by_scan(output, paths) else []))


def _render(session: Session, fmt: str, statistics: bool, color: bool) -> str:
    """The report of a scan session in ``fmt``."""
    from migrate.report import render
    from migrate.report.effort import project_model

    return render(
        session.result,
        fmt,
        session.rules,
        root=session.root,
        statistics=statistics,
        color=color,
        effort=project_model(session.effort),
    )


def register(app: typer.Typer) -> None:
    @app.command("scan")
    def scan(
        paths: list[Path] = typer.Argument(..., help="Files or folders to scan."),
        fmt: str = typer.Option("text", "--format", help="text | json | sarif | markdown | github"),
        output: Path = typer.Option(None, "-o", "--output", help="Write the report to this file."),
        select: list[str] = typer.Option(None, "--select", help="Rule codes or prefixes (MIG1,MIG201)."),
        extend_select: list[str] = typer.Option(
            None, "--extend-select", help="Rule codes or prefixes to add to the selection."
        ),
        ignore: list[str] = typer.Option(None, "--ignore", help="Rule codes or prefixes to skip."),
        per_file_ignores: list[str] = typer.Option(
            None, "--per-file-ignores", help="GLOB:CODE[,CODE...]: skip rules in matching files."
        ),
        exclude: list[str] = typer.Option(None, "--exclude", help="Glob of paths to skip."),
        fail_on: str = typer.Option(
            None,
            "--fail-on",
            help="Lowest category that fails the run: perf | auto | "
            "assisted | manual (default auto: perf never fails).",
        ),
        exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even with findings."),
        statistics: bool = typer.Option(False, "--statistics", help="Counts per rule instead of findings."),
        jobs: int = typer.Option(None, "--jobs", "-j", help="Worker processes (default: CPU count)."),
        no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the cache."),
        cache_dir: Path = typer.Option(None, "--cache-dir", help="Cache folder."),
        config: Path = typer.Option(None, "--config", help="pyproject.toml to read [tool.migrate] from."),
        no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
        target: str = typer.Option(
            None, "--target", help="portable (default) | npu | transfer: what the fixes aim at."
        ),
        follow_symlinks: bool = typer.Option(
            False, "--follow-symlinks", help="Follow symlinks that lead out of the given paths."
        ),
    ) -> None:
        """Report every CUDA-only use in PATH with a rule ID, category and suggestion."""
        if fmt not in FORMATS:
            raise UsageError(f"--format {fmt}: choose one of {', '.join(FORMATS)}")
        if fail_on is not None and fail_on not in CATEGORY_RANK:
            raise UsageError(f"--fail-on {fail_on}: choose {', '.join(FAIL_ON)}")
        _check_output(output, paths, config)
        show = not no_progress and sys.stderr.isatty()
        request = ScanRequest(
            paths,
            select=select,
            ignore=ignore,
            exclude=exclude,
            jobs=jobs,
            no_cache=no_cache,
            cache_dir=cache_dir,
            config=config,
            target=target,
            follow_symlinks=follow_symlinks,
            extend_select=extend_select,
            per_file_ignores=per_file_ignores,
        )
        memo = Recording.start(None if no_cache else cache_dir or default_cache_dir())
        session = scan_with_config(cli_request(request), show)
        result, cfg = session.result, session.config
        threshold = fail_on or cfg.fail_on or "auto"
        if threshold not in CATEGORY_RANK:
            raise UsageError(f"--fail-on {threshold}: choose {', '.join(FAIL_ON)}")
        color = output is None and fmt == "text" and sys.stdout.isatty()
        text = _render(session, fmt, statistics, color)
        from migrate.scan.config import config_folders

        data = emit(text, output)
        code = 1 if not exit_zero and failed(result, threshold) else 0
        if memo is not None:
            onnx = any(f.kind == "onnx" for f in result.files.values())
            memo.finish(data, output, code, config_folders(paths[0]), skip=onnx)
        if code:
            raise typer.Exit(code)
