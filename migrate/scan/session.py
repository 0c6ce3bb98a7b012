"""One scan as both commands run it: [tool.migrate] merged with the command line, the rules
selected once, the files scanned. `migrate scan` renders the result; `migrate apply` fixes it."""

from __future__ import annotations

from collections.abc import Callable
import os
from dataclasses import dataclass
from pathlib import Path

from migrate.core.errors import UsageError
from migrate.core.display import escape
from migrate.core.findings import ScanResult
from migrate.core.rules import Rule, default_rules, select_rules
from migrate.core.targets import DEFAULT_TARGET, TargetChoice, check_target
from migrate.scan.config import ProjectConfig, load_config


@dataclass
class ScanRequest:
    """What the user asked for on the command line (None / empty: not given)."""

    paths: list[Path]
    select: list[str] | None = None
    ignore: list[str] | None = None
    exclude: list[str] | None = None
    jobs: int | None = None
    no_cache: bool = False
    cache_dir: Path | None = None
    config: Path | None = None
    target: str | None = None  # --target
    follow_symlinks: bool = False
    verify_content: bool = False  # hash every file, even when size and mtime match the cache


@dataclass
class Session:
    result: ScanResult
    rules: list[Rule]  # the selected rules
    root: Path  # what finding paths are relative to
    config: ProjectConfig
    targets: TargetChoice = TargetChoice()


def target_choice(request: ScanRequest, cfg: ProjectConfig) -> TargetChoice:
    """--target beats [tool.migrate] target; per-path-target still applies to its globs
    unless --target was given (the command line names the target for every file)."""
    if request.target is not None:
        return TargetChoice(check_target(request.target, "--target"))
    return TargetChoice(cfg.target or DEFAULT_TARGET, tuple(cfg.per_path_target.items()))


def split_codes(values: list[str] | None) -> list[str] | None:
    """--select A,B --select C -> [A, B, C]; None when not given."""
    if not values:
        return None
    out = [v.strip() for value in values for v in value.split(",") if v.strip()]
    return out or None


def check_paths(paths: list[Path]) -> None:
    if not paths:
        raise UsageError("no path given")
    for p in paths:
        if not os.path.lexists(p):
            raise UsageError(f"{escape(str(p))}: no such file or folder")


def check_jobs(jobs: int | None) -> None:
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs {jobs}: must be at least 1 (it is capped at the CPU count)")


def check_codes(codes: list[str] | None, flag: str) -> None:
    if not codes:
        return
    rules = default_rules()
    for code in codes:
        if not any(r.code.startswith(code) or r.name == code for r in rules):
            raise UsageError(f"{flag} {code}: no rule has this code or name (see `migrate rules`)")


def run_session(request: ScanRequest,
                progress: Callable[[int, int], None] | None = None) -> Session:
    """Scan ``request.paths`` honouring [tool.migrate]."""
    from migrate.scan.cache import default_cache_dir
    from migrate.scan.discover import scan_root
    from migrate.scan.engine import ScanOptions, scan_paths

    check_paths(request.paths)
    check_jobs(request.jobs)
    cfg = load_config(request.paths[0], request.config)
    select = split_codes(request.select) or cfg.select
    ignore = (split_codes(request.ignore) or []) + cfg.ignore
    check_codes(select, "--select")
    targets = target_choice(request, cfg)
    options = ScanOptions(
        select=select, ignore=ignore, exclude=[*cfg.exclude, *(request.exclude or [])],
        jobs=request.jobs,
        cache_dir=None if request.no_cache else (request.cache_dir or default_cache_dir()),
        respect_gitignore=cfg.respect_gitignore, progress=progress, targets=targets,
        follow_symlinks=request.follow_symlinks, trust_mtime=not request.verify_content,
    )
    result = scan_paths(request.paths, options)
    rules = select_rules(default_rules(), select, ignore)
    return Session(result, rules, scan_root(request.paths), cfg, targets)
