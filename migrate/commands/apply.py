"""CLI: `migrate apply PATH...` — rewrite CUDA code for Ascend, in place or as a diff."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from migrate.core.errors import UsageError
from migrate.scan.session import ScanRequest

if TYPE_CHECKING:
    from migrate.fix.rewrite import Options
    from migrate.fix.run import ApplyRun

FORMATS = ("text", "json")


Paths = Annotated[list[Path], typer.Argument(help="Files or folders to rewrite.")]
DiffOpt = Annotated[bool, typer.Option("--diff", help="Print a unified diff; write nothing.")]
CheckOpt = Annotated[bool, typer.Option("--check", help="Exit 1 if anything would change.")]
UnsafeOpt = Annotated[bool, typer.Option("--unsafe-fixes", help="Also make fixes that may change behaviour.")]
FormatOpt = Annotated[str, typer.Option("--format", help="text | json (every edit).")]
SelectOpt = Annotated[list[str] | None, typer.Option("--select", help="Rule codes or prefixes.")]
IgnoreOpt = Annotated[list[str] | None, typer.Option("--ignore", help="Rule codes or prefixes to skip.")]
ExcludeOpt = Annotated[list[str] | None, typer.Option("--exclude", help="Glob of paths to skip.")]
AnnotateOpt = Annotated[
    bool, typer.Option("--annotate", help="Mark manual findings with # migrate[RULE] comments.")
]
StripOpt = Annotated[bool, typer.Option("--strip-annotations", help="Only remove # migrate[RULE] comments.")]
ExitZeroOpt = Annotated[
    bool, typer.Option("--exit-zero", help="Exit 0 even if files would change or a rewrite was refused.")
]
JobsOpt = Annotated[int | None, typer.Option("--jobs", "-j", help="Worker processes for the scan.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not use the scan cache.")]
CacheDirOpt = Annotated[Path | None, typer.Option("--cache-dir", help="Cache folder.")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="pyproject.toml with [tool.migrate].")]
NoProgressOpt = Annotated[bool, typer.Option("--no-progress", help="No progress bar.")]
TargetOpt = Annotated[
    str | None,
    typer.Option(
        "--target",
        help="portable (keeps CUDA working; default) | npu (NPU only) | transfer "
        "(torch_npu's transfer_to_npu at entry points).",
    ),
]
FollowOpt = Annotated[
    bool, typer.Option("--follow-symlinks", help="Follow symlinks that lead out of the given paths.")
]
ForceOpt = Annotated[bool, typer.Option("--force", help="Rewrite read-only files too.")]


def _annotated_files(
    paths: list[Path], root: Path, exclude: list[str], gitignore: bool, follow_symlinks: bool = False
):
    """Files holding `# migrate[...]` annotations, for --strip-annotations."""
    from migrate.core.fileio import SourceError, read_bytes
    from migrate.fix.annotate import COMMENT_KINDS
    from migrate.scan.discover import Walker

    walker = Walker(root, exclude, gitignore, follow_symlinks)
    out = []
    for sf in walker.walk(paths):
        if sf.kind not in COMMENT_KINDS:
            continue
        try:
            if b" migrate[MIG" in read_bytes(sf.path)[0]:
                out.append((Path(sf.path), sf.rel, sf.kind))
        except SourceError:
            continue
    return out


@dataclass(frozen=True)
class ApplyRequest:
    """What `migrate apply` was asked, built once from its options and passed by name (a
    reordering of the options cannot swap two of them)."""

    paths: list[Path]
    diff: bool = False
    check: bool = False
    unsafe_fixes: bool = False
    fmt: str = "text"
    select: list[str] | None = None
    ignore: list[str] | None = None
    exclude: list[str] | None = None
    annotate: bool = False
    strip: bool = False  # --strip-annotations
    jobs: int | None = None
    no_cache: bool = False
    cache_dir: Path | None = None
    config: Path | None = None
    show_progress: bool = False
    follow_symlinks: bool = False
    force: bool = False
    target: str | None = None

    def scan_request(self) -> ScanRequest:
        """The scan apply runs first: every file hashed, an unreadable pyproject an error."""
        return ScanRequest(
            self.paths,
            select=self.select,
            ignore=self.ignore,
            exclude=self.exclude,
            jobs=self.jobs,
            no_cache=self.no_cache,
            cache_dir=self.cache_dir,
            config=self.config,
            target=self.target,
            follow_symlinks=self.follow_symlinks,
            verify_content=True,
            strict_config=True,
        )


def run_apply(request: ApplyRequest) -> tuple[ApplyRun, Options]:
    """Scan, then rewrite (or diff, or check) what the scan found: the run and its options."""
    from migrate.commands.progress import cli_request, scan_with_config
    from migrate.core.filelock import wait_limit
    from migrate.fix.rewrite import Options
    from migrate.fix.run import apply_scan
    from migrate.scan.session import for_apply

    if request.fmt not in FORMATS:
        raise UsageError(f"--format {request.fmt}: choose text or json")
    wait_limit()  # a bad $MIGRATE_LOCK_TIMEOUT is a usage error before any work
    if request.strip and request.annotate:
        raise UsageError("--annotate and --strip-annotations exclude each other")
    session = scan_with_config(cli_request(request.scan_request()), request.show_progress)
    session = for_apply(session, request.select)
    result, rules, root, cfg = session.result, session.rules, session.root, session.config
    options = Options(
        unsafe=request.unsafe_fixes or cfg.unsafe_fixes,
        annotate=request.annotate,
        strip=request.strip,
        write=not (request.diff or request.check),
        force=request.force,
        targets=session.targets,
    )
    exclude = [*cfg.exclude, *(request.exclude or [])]
    files = (
        _annotated_files(request.paths, root, exclude, cfg.respect_gitignore, request.follow_symlinks)
        if request.strip
        else []
    )
    return apply_scan(result, root, rules, options, files, request.jobs), options


def register(app: typer.Typer) -> None:
    @app.command("apply")
    def apply(
        paths: Paths,
        diff: DiffOpt = False,
        check: CheckOpt = False,
        unsafe_fixes: UnsafeOpt = False,
        fmt: FormatOpt = "text",
        select: SelectOpt = None,
        ignore: IgnoreOpt = None,
        exclude: ExcludeOpt = None,
        annotate: AnnotateOpt = False,
        strip_annotations: StripOpt = False,
        exit_zero: ExitZeroOpt = False,
        jobs: JobsOpt = None,
        no_cache: NoCacheOpt = False,
        cache_dir: CacheDirOpt = None,
        config: ConfigOpt = None,
        no_progress: NoProgressOpt = False,
        follow_symlinks: FollowOpt = False,
        force: ForceOpt = False,
        target: TargetOpt = None,
    ) -> None:
        """Make the mechanical part of the port: safe fixes by default, in place.

        Exit codes: 0 done; 1 with --check/--diff when something would change, or when a
        file could not be read, scanned or rewritten (errors); 2 usage error, or a file
        another process held locked past $MIGRATE_LOCK_TIMEOUT seconds (default 60).
        """
        from migrate.commands.apply_output import errors_text, summary_text, to_json, unified_diff
        from migrate.core.display import escape, shown_path

        request = ApplyRequest(
            paths,
            diff=diff,
            check=check,
            unsafe_fixes=unsafe_fixes,
            fmt=fmt,
            select=select,
            ignore=ignore,
            exclude=exclude,
            annotate=annotate,
            strip=strip_annotations,
            jobs=jobs,
            no_cache=no_cache,
            cache_dir=cache_dir,
            config=config,
            show_progress=not no_progress and sys.stderr.isatty(),
            follow_symlinks=follow_symlinks,
            force=force,
            target=target,
        )
        run, options = run_apply(request)
        written = options.write
        if fmt == "json":  # with --diff the diffs go inside the JSON document
            sys.stdout.write(to_json(run, written=written, diffs=diff))
        else:
            if diff:
                sys.stdout.write("".join(unified_diff(o, run.root) for o in run.changed))
            report = sys.stderr if diff else sys.stdout
            if check and not diff:
                report.write(
                    "".join(f"would change: {escape(shown_path(o.rel, run.root))}\n" for o in run.changed)
                )
            sys.stderr.write(errors_text(run))
            report.write(summary_text(run, written=written, unsafe=options.unsafe, color=report.isatty()))
        if exit_zero:
            return
        if ((diff or check) and run.changed) or run.errors:
            raise typer.Exit(1)
