"""Project configuration: ``[tool.migrate]`` in the scanned project's pyproject.toml.

Keys (all optional): select, extend-select, ignore, exclude, extend-exclude (lists of
strings), per-file-ignores (table: path glob -> list of codes), fail-on (perf | auto |
assisted | manual), unsafe-fixes (bool), respect-gitignore (bool), and the effort table
``[tool.migrate.effort]`` (rule code or category -> minutes, or an effort row as in
migrate/core/effort_spec.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from migrate.core.errors import UsageError

_KEYS = {"select", "extend-select", "ignore", "exclude", "extend-exclude", "per-file-ignores",
         "fail-on", "unsafe-fixes", "respect-gitignore", "effort"}


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
    source: Path | None = None


def find_pyproject(start: Path) -> Path | None:
    folder = start.resolve()
    if folder.is_file():
        folder = folder.parent
    for candidate in [folder, *folder.parents]:
        p = candidate / "pyproject.toml"
        if p.is_file():
            return p
        if (candidate / ".git").exists():
            return None
    return None


def load_config(start: Path, explicit: Path | None = None) -> ProjectConfig:
    path = explicit or find_pyproject(start)
    if path is None:
        return ProjectConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        if explicit:
            raise UsageError(f"cannot read config {path}: {exc}") from None
        return ProjectConfig()  # a broken pyproject is reported by the dependency rules
    section = data.get("tool", {}).get("migrate", {})
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
    cfg.exclude = [*(_strings(section, "exclude", path) or []),
                   *(_strings(section, "extend-exclude", path) or [])]
    cfg.fail_on = section.get("fail-on")
    cfg.unsafe_fixes = bool(section.get("unsafe-fixes", False))
    cfg.respect_gitignore = bool(section.get("respect-gitignore", True))
    return cfg


def _strings(section: dict, key: str, path: Path) -> list[str] | None:
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{path}: [tool.migrate] {key} must be a list of strings")
    return value


def _per_file_ignores(value, path: Path) -> dict[str, list[str]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"{path}: [tool.migrate] per-file-ignores must be a table of glob = [codes]")
    out = {}
    for glob, codes in value.items():
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
            check_effort(row if isinstance(row, dict) else {"minutes": row},
                         f"{path}: [tool.migrate.effort] {key}")
        except EffortError as exc:
            raise UsageError(str(exc)) from None
    return dict(value)
