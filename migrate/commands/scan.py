"""CLI: `migrate scan PATH...` — the gap report."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

import typer

from migrate.commands.output import emit
from migrate.errors import UsageError
from migrate.findings import CATEGORY_RANK, ScanResult
from migrate.rules import default_rules, select_rules

FORMATS = ("text", "json", "sarif", "markdown", "github")


def split_codes(values: list[str] | None) -> list[str] | None:
    """--select A,B --select C -> [A, B, C]; None when not given."""
    if not values:
        return None
    out = [v.strip() for value in values for v in value.split(",") if v.strip()]
    return out or None


def check_paths(paths: list[Path]) -> None:
    for p in paths:
        if not p.exists() and not p.is_symlink():
            raise UsageError(f"{p}: no such file or folder")


def check_codes(codes: list[str] | None, flag: str) -> None:
    if not codes:
        return
    rules = default_rules()
    for code in codes:
        if not any(r.code.startswith(code) or r.name == code for r in rules):
            raise UsageError(f"{flag} {code}: no rule has this code or name (see `migrate rules`)")


@contextmanager
def progress_bar(enabled: bool):
    """Yields a callback(done, total) that drives a rich progress bar on stderr."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    progress = Progress(TextColumn("scanning"), BarColumn(), MofNCompleteColumn(),
                        console=Console(stderr=True), transient=True)
    task = None

    def update(done: int, total: int) -> None:
        nonlocal task
        if task is None:
            task = progress.add_task("scan", total=total)
        progress.update(task, completed=done)

    with progress:
        yield update


def scan_with_config(paths: list[Path], select, ignore, exclude, jobs, no_cache, cache_dir,
                     config, show_progress: bool):
    """Run a scan honouring [tool.migrate]; returns (result, rules, root, project config)."""
    from migrate.source.cache import default_cache_dir
    from migrate.source.config import load_config
    from migrate.source.discover import scan_root
    from migrate.source.engine import ScanOptions, scan_paths

    check_paths(paths)
    cfg = load_config(paths[0], config)
    select = split_codes(select) or cfg.select
    ignore = (split_codes(ignore) or []) + cfg.ignore
    check_codes(select, "--select")
    options = ScanOptions(
        select=select, ignore=ignore, exclude=[*cfg.exclude, *(exclude or [])], jobs=jobs,
        cache_dir=None if no_cache else (cache_dir or default_cache_dir()),
        respect_gitignore=cfg.respect_gitignore,
    )
    with progress_bar(show_progress) as update:
        options.progress = update
        result = scan_paths(paths, options)
    rules = select_rules(default_rules(), select, ignore)
    return result, rules, scan_root(paths), cfg


def failed(result: ScanResult, fail_on: str) -> bool:
    threshold = CATEGORY_RANK[fail_on]
    return any(CATEGORY_RANK[f.category] >= threshold for f in result.findings)


def register(app: typer.Typer) -> None:
    @app.command("scan")
    def scan(
        paths: list[Path] = typer.Argument(..., help="Files or folders to scan."),
        fmt: str = typer.Option("text", "--format", help="text | json | sarif | markdown | github"),
        output: Path = typer.Option(None, "-o", "--output", help="Write the report to this file."),
        select: list[str] = typer.Option(None, "--select", help="Rule codes or prefixes (MIG1,MIG201)."),
        ignore: list[str] = typer.Option(None, "--ignore", help="Rule codes or prefixes to skip."),
        exclude: list[str] = typer.Option(None, "--exclude", help="Glob of paths to skip."),
        fail_on: str = typer.Option(None, "--fail-on",
                                    help="Lowest category that fails the run: auto | assisted | manual."),
        exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even with findings."),
        statistics: bool = typer.Option(False, "--statistics", help="Counts per rule instead of findings."),
        jobs: int = typer.Option(None, "--jobs", "-j", help="Worker processes (default: CPU count)."),
        no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the cache."),
        cache_dir: Path = typer.Option(None, "--cache-dir", help="Cache folder."),
        config: Path = typer.Option(None, "--config", help="pyproject.toml to read [tool.migrate] from."),
        no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
    ) -> None:
        """Report every CUDA-only use in PATH with a rule ID, category and suggestion."""
        if fmt not in FORMATS:
            raise UsageError(f"--format {fmt}: choose one of {', '.join(FORMATS)}")
        show = not no_progress and sys.stderr.isatty()
        result, rules, root, cfg = scan_with_config(
            paths, select, ignore, exclude, jobs, no_cache, cache_dir, config, show)
        threshold = fail_on or cfg.fail_on or "auto"
        if threshold not in CATEGORY_RANK:
            raise UsageError(f"--fail-on {threshold}: choose auto, assisted or manual")
        from migrate.report import render

        color = output is None and fmt == "text" and sys.stdout.isatty()
        text = render(result, fmt, rules, root=root, statistics=statistics, color=color)
        emit(text, output)
        if not exit_zero and failed(result, threshold):
            raise typer.Exit(1)
