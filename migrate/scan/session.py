"""One scan as both commands run it: [tool.migrate] merged with the command line, the rules
selected once, the files scanned. `migrate scan` renders the result; `migrate apply` fixes it."""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.core.findings import ScanResult
from migrate.core.inputs import check_glob
from migrate.core.rules import Rule, default_rules, select_rules
from migrate.core.targets import DEFAULT_TARGET, TargetChoice, check_target
from migrate.scan.config import ProjectConfig, load_config


@dataclass(frozen=True)
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
    extend_select: list[str] | None = None
    per_file_ignores: list[str] | None = None  # "GLOB:CODE,CODE" as on the command line
    strict_config: bool = False  # an unreadable pyproject is a usage error (apply), not a file error


@dataclass
class Session:
    result: ScanResult
    rules: list[Rule]  # the selected rules
    root: Path  # what finding paths are relative to
    config: ProjectConfig
    effort: dict[str, object] | None = None  # [tool.migrate.effort] overrides
    targets: TargetChoice = TargetChoice()


def target_choice(request: ScanRequest, cfg: ProjectConfig) -> TargetChoice:
    """--target beats [tool.migrate] target; per-path-target still applies to its globs
    unless --target was given (the command line names the target for every file)."""
    if request.target is not None:
        return TargetChoice(check_target(request.target, "--target"))
    return TargetChoice(cfg.target or DEFAULT_TARGET, tuple(cfg.per_path_target.items()))


def split_codes(values: list[str] | None, flag: str = "rule selection") -> list[str] | None:
    """--select A,B --select C -> [A, B, C]; None when not given. An empty code (``A,,B``,
    ``" "``) is an error: it would match every rule."""
    if not values:
        return None
    out = [v.strip() for value in values for v in value.split(",")]
    if not all(out):
        raise UsageError(f"{flag} {','.join(values)!r}: an empty rule code")
    return out


def check_paths(paths: list[Path]) -> None:
    if not paths:
        raise UsageError("no path given")
    for p in paths:
        if not os.path.lexists(p):
            raise UsageError(f"{escape(str(p))}: no such file or folder")
        try:
            mode = os.stat(p).st_mode
        except OSError as exc:  # a symlink loop or a dangling link given by name
            raise UsageError(f"{escape(str(p))}: {exc.strerror}") from None
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # /dev/zero: nothing scanned, exit 0
            raise UsageError(f"{escape(str(p))}: not a regular file or folder (a FIFO, device or socket)")


def check_jobs(jobs: int | None) -> None:
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs {jobs}: must be at least 1 (it is capped at the CPU count)")


_PREFIX = re.compile(r"MIG[0-9]{0,3}")


def check_codes(codes: list[str] | None, flag: str) -> None:
    """Unknown and empty codes fail the same way wherever they are given (ruff parity:
    exit 2): a code, a prefix of codes (``MIG2``) or a rule name, nothing else (``""`` or
    ``"M"`` would match every rule)."""
    if not codes:
        return
    rules = default_rules()
    for code in codes:
        if not isinstance(code, str) or not code.strip():
            raise UsageError(f"{flag}: an empty rule code (it would match every rule)")
        if not any(r.name == code for r in rules) and not (
            _PREFIX.fullmatch(code) and any(r.code.startswith(code) for r in rules)
        ):
            raise UsageError(f"{flag} {escape(code)}: no rule has this code or name (see `migrate rules`)")


def parse_per_file_ignores(values: list[str] | None) -> dict[str, list[str]]:
    """["tests/*:MIG201,MIG202", ...] -> {"tests/*": ["MIG201", "MIG202"]}."""
    out: dict[str, list[str]] = {}
    for value in values or []:
        glob, sep, codes = value.rpartition(":")
        if not sep or not glob or not codes.strip():
            raise UsageError(f"--per-file-ignores {value}: want GLOB:CODE[,CODE...]")
        check_glob(glob, "--per-file-ignores")
        out.setdefault(glob, []).extend(c.strip() for c in codes.split(",") if c.strip())
    return out


def _matches(rel: str, glob: str) -> bool:
    if fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(rel, glob.rstrip("/") + "/*"):
        return True
    return "/" not in glob and fnmatch.fnmatch(rel.rsplit("/", 1)[-1], glob)


def drop_per_file(result: ScanResult, ignores: dict[str, list[str]]) -> None:
    """Remove findings whose path matches a glob that ignores their rule."""
    if not ignores:
        return

    def ignored(f) -> bool:
        return any(
            _matches(f.path, glob) and any(f.rule.startswith(c) or f.name == c for c in codes)
            for glob, codes in ignores.items()
        )

    result.findings = [f for f in result.findings if not ignored(f)]


def _check_effort_keys(effort: dict[str, object], source) -> None:
    from migrate.core.findings import CATEGORIES

    codes = {r.code for r in default_rules()}
    for key in effort:
        if key not in codes and key not in CATEGORIES:
            raise UsageError(
                f"{source}: [tool.migrate.effort] {key}: not a rule code or a "
                f"category ({', '.join(CATEGORIES)})"
            )


def run_session(request: ScanRequest, progress: Callable[[int, int], None] | None = None) -> Session:
    """Scan ``request.paths`` honouring [tool.migrate]."""
    from migrate.core.cache_files import default_cache_dir
    from migrate.scan.discover import scan_root
    from migrate.scan.engine import ScanOptions, scan_paths

    check_paths(request.paths)
    check_jobs(request.jobs)
    cfg = load_config(request.paths[0], request.config, strict=request.strict_config)
    select = split_codes(request.select, "--select") or cfg.select
    extend = [*cfg.extend_select, *(split_codes(request.extend_select, "--extend-select") or [])]
    ignore = (split_codes(request.ignore, "--ignore") or []) + cfg.ignore
    where = f"{cfg.source}: [tool.migrate]" if cfg.source else "[tool.migrate]"
    check_codes(split_codes(request.select, "--select"), "--select")
    check_codes(split_codes(request.extend_select, "--extend-select"), "--extend-select")
    check_codes(split_codes(request.ignore, "--ignore"), "--ignore")
    check_codes(cfg.select, f"{where} select")
    check_codes(cfg.extend_select, f"{where} extend-select")
    check_codes(cfg.ignore, f"{where} ignore")
    per_file = {**cfg.per_file_ignores}
    for glob, codes in parse_per_file_ignores(request.per_file_ignores).items():
        per_file[glob] = [*per_file.get(glob, []), *codes]
    for codes in per_file.values():
        check_codes(codes, "per-file-ignores")
    _check_effort_keys(cfg.effort, cfg.source)
    targets = target_choice(request, cfg)
    options = ScanOptions(
        select=select,
        ignore=ignore,
        extend_select=extend,
        exclude=[*cfg.exclude, *(request.exclude or [])],
        jobs=request.jobs,
        cache_dir=None if request.no_cache else (request.cache_dir or default_cache_dir()),
        respect_gitignore=cfg.respect_gitignore,
        progress=progress,
        targets=targets,
        follow_symlinks=request.follow_symlinks,
        trust_mtime=not request.verify_content,
        device_helper=cfg.device_helper,
    )
    result = scan_paths(request.paths, options)
    drop_per_file(result, per_file)
    rules = select_rules(default_rules(), select, ignore, extend)
    return Session(result, rules, scan_root(request.paths), cfg, cfg.effort, targets)


def for_apply(session: Session, select: list[str] | None) -> Session:
    """The session `migrate apply` works on: perf advice is optional, so its rules (and
    their findings) stay only when --select names them (``--select MIG901`` or ``MIG9``)."""
    wanted = split_codes(select) or []
    rules = [
        r
        for r in session.rules
        if r.category != "perf" or any(r.code.startswith(c) or r.name == c for c in wanted if len(c) > 3)
    ]
    kept = {r.code for r in rules}
    result = dataclasses.replace(
        session.result, findings=[f for f in session.result.findings if f.rule in kept]
    )
    return dataclasses.replace(session, result=result, rules=rules)
