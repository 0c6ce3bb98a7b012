"""The scan both commands run (`migrate scan` renders it, `migrate apply` fixes it), with a
progress bar on a terminal."""

from __future__ import annotations

from contextlib import contextmanager

from migrate.core.inputs import check_glob
from migrate.scan.session import ScanRequest, Session, run_session


def cli_request(request: ScanRequest) -> ScanRequest:
    """``request`` (built by `scan` or `apply` from their options, by name) with its path
    globs checked as the config's are."""
    for glob in request.exclude or []:
        check_glob(glob, "--exclude")
    return request


@contextmanager
def progress_bar(enabled: bool):
    """Yields a callback(done, total) that drives a rich progress bar on stderr."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    progress = Progress(
        TextColumn("scanning"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = None

    def update(done: int, total: int) -> None:
        nonlocal task
        if task is None:
            task = progress.add_task("scan", total=total)
        progress.update(task, completed=done)

    with progress:
        yield update


def scan_with_config(request: ScanRequest, show_progress: bool) -> Session:
    """The session both commands run, with a progress bar on a terminal."""
    with progress_bar(show_progress) as update:
        return run_session(request, update)
