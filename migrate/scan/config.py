"""Project configuration: ``[tool.migrate]`` in the scanned project's pyproject.toml.

Keys (all optional): select, extend-select, ignore, exclude, extend-exclude (lists of
strings), per-file-ignores (table: path glob -> list of codes), fail-on (perf | auto |
assisted | manual), unsafe-fixes (bool), respect-gitignore (bool), the effort table
``[tool.migrate.effort]`` (rule code or category -> minutes, or an effort row as in
migrate/core/effort_spec.py), target (portable | npu | transfer) and per-path-target (a
table: path glob -> target).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from migrate.core.errors import UsageError
from migrate.core.fileio import SourceError, read_bytes
from migrate.core.inputs import MAX_DOC_BYTES, check_glob

_KEYS = {
    "select",
    "extend-select",
    "ignore",
    "exclude",
    "extend-exclude",
    "per-file-ignores",
    "fail-on",
    "unsafe-fixes",
    "respect-gitignore",
    "effort",
    "target",
    "per-path-target",
    "device-helper",
}


@dataclass
class ProjectConfig:
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    effort: dict[str, object] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=list)
    fail_on: str | None = None
    unsafe_fixes: bool = False
    respect_gitignore: bool = True
    target: str | None = None
    per_path_target: dict[str, str] = field(default_factory=dict)
    device_helper: str | None = None  # the module holding the project's device helpers
    source: Path | None = None


def find_pyproject(start: Path) -> Path | None:
    found = None
    for candidate in config_folders(start):
        p = candidate / "pyproject.toml"
        # Anything by that name is the config: a FIFO, a device or a dangling link is not
        # passed over for a parent's (apply refuses a config it cannot read).
        found = p if os.path.lexists(p) else None
    return found


def config_folders(start: Path) -> Iterator[Path]:
    """The folders the config is looked for in, nearest first: ``start`` (or its folder)
    and its parents, up to the first holding a pyproject.toml or a .git (the repository
    root); what a run depends on for its config (migrate/scan/run_memo.py)."""
    folder = Path(os.path.realpath(start))
    if not _quiet(folder.is_dir):
        folder = folder.parent
    for candidate in [folder, *folder.parents]:
        yield candidate
        if os.path.lexists(candidate / "pyproject.toml") or _quiet((candidate / ".git").exists):
            return


def _quiet(test) -> bool:
    try:
        return test()
    except OSError:  # an unreadable folder on the way up
        return False


def load_config(start: Path, explicit: Path | None = None, *, strict: bool = False) -> ProjectConfig:
    """[tool.migrate] of ``explicit`` or the nearest pyproject.toml; every key typed
    (UsageError naming the file and the key otherwise). An auto-discovered pyproject that
    cannot be read or parsed is ignored here (the scan reports it under ``errors``) unless
    ``strict``: `apply` must not rewrite files that the unread config may exclude."""
    path = explicit or find_pyproject(start)
    if path is None:
        return ProjectConfig()
    try:
        data = tomllib.loads(read_bytes(path, MAX_DOC_BYTES)[0].decode("utf-8"))
    except (SourceError, ValueError, tomllib.TOMLDecodeError, RecursionError) as exc:
        # ValueError: not UTF-8, or an integer past Python's digit limit
        if explicit or strict:
            raise UsageError(f"cannot read config {path}: {exc}") from None
        return ProjectConfig()
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise UsageError(f"{path}: `tool` must be a table")
    section = tool.get("migrate", {})
    if not isinstance(section, dict):
        raise UsageError(f"{path}: [tool.migrate] must be a table")
    unknown = set(section) - _KEYS
    if unknown:
        raise UsageError(f"{path}: unknown [tool.migrate] keys: {', '.join(sorted(unknown))}")
    cfg = ProjectConfig(source=path)
    cfg.select = _strings(section, "select", path)
    cfg.extend_select = _strings(section, "extend-select", path) or []
    cfg.ignore = _strings(section, "ignore", path) or []
    cfg.per_file_ignores = _per_file_ignores(section.get("per-file-ignores"), path)
    cfg.effort = _effort(section.get("effort"), path)
    cfg.exclude = [
        *_globs(_strings(section, "exclude", path) or [], f"{path}: [tool.migrate] exclude"),
        *_globs(_strings(section, "extend-exclude", path) or [], f"{path}: [tool.migrate] extend-exclude"),
    ]
    cfg.fail_on = _choice(section, "fail-on", FAIL_ON, path)
    cfg.unsafe_fixes = _bool(section, "unsafe-fixes", False, path)
    cfg.respect_gitignore = _bool(section, "respect-gitignore", True, path)
    cfg.target, cfg.per_path_target = _targets(section, path)
    cfg.device_helper = _module_name(section, "device-helper", path)
    return cfg


def _targets(section: dict, path: Path) -> tuple[str | None, dict[str, str]]:
    from migrate.core.targets import check_target

    target = section.get("target")
    if target is not None:
        if not isinstance(target, str):
            raise UsageError(f"{path}: [tool.migrate] target must be a string")
        check_target(target, f"{path}: [tool.migrate] target")
    per_path = section.get("per-path-target") or {}
    if not isinstance(per_path, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in per_path.items()
    ):
        raise UsageError(f"{path}: [tool.migrate] per-path-target must be a table of glob = target")
    for glob, value in per_path.items():
        check_glob(glob, f"{path}: [tool.migrate] per-path-target")
        check_target(value, f"{path}: [tool.migrate] per-path-target {glob!r}")
    return target, dict(per_path)


FAIL_ON = ("auto", "assisted", "manual")


def _module_name(section: dict, key: str, path: Path) -> str | None:
    """A dotted module name ("pkg.utils.device"), or None when not given."""
    value = section.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or not all(p.isidentifier() for p in value.split(".")):
        raise UsageError(
            f'{path}: [tool.migrate] {key} must be a dotted module name such as "mypkg.utils.device"'
        )
    return value


def _bool(section: dict, key: str, default: bool, path: Path) -> bool:
    value = section.get(key, default)
    if not isinstance(value, bool):  # "false" is a string, and a true one
        raise UsageError(
            f"{path}: [tool.migrate] {key} must be true or false (a TOML boolean, not {value!r})"
        )
    return value


def _choice(section: dict, key: str, choices: tuple[str, ...], path: Path) -> str | None:
    value = section.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or value not in choices:
        raise UsageError(f"{path}: [tool.migrate] {key} must be one of {', '.join(choices)} (got {value!r})")
    return value


def _strings(section: dict, key: str, path: Path) -> list[str] | None:
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{path}: [tool.migrate] {key} must be a list of strings")
    return value


def _globs(globs: list[str], where: str) -> list[str]:
    return [check_glob(g, where) for g in globs]


def _per_file_ignores(value, path: Path) -> dict[str, list[str]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"{path}: [tool.migrate] per-file-ignores must be a table of glob = [codes]")
    out = {}
    for glob, codes in value.items():
        check_glob(glob, f"{path}: [tool.migrate] per-file-ignores")
        codes = [codes] if isinstance(codes, str) else codes
        if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
            raise UsageError(f"{path}: [tool.migrate] per-file-ignores {glob!r} must be a list of codes")
        out[str(glob)] = codes
    return out


def _effort(value, path: Path) -> dict[str, object]:
    from migrate.core.effort_spec import EffortError, check_effort

    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"{path}: [tool.migrate.effort] must be a table")
    for key, row in value.items():
        try:
            check_effort(
                row if isinstance(row, dict) else {"minutes": row}, f"{path}: [tool.migrate.effort] {key}"
            )
        except EffortError as exc:
            raise UsageError(str(exc)) from None
    return dict(value)
