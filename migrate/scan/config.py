"""Project configuration: ``[tool.migrate]`` in the scanned project's pyproject.toml.

Keys (all optional): select, ignore, exclude, extend-exclude (lists of strings),
fail-on (auto | assisted | manual), unsafe-fixes (bool), respect-gitignore (bool).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from migrate.core.errors import UsageError

_KEYS = {"select", "ignore", "exclude", "extend-exclude", "fail-on", "unsafe-fixes",
         "respect-gitignore"}


@dataclass
class ProjectConfig:
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
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
    cfg.ignore = _strings(section, "ignore", path) or []
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
