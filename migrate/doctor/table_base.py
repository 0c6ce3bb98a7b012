"""The doctor's table primitives: the data folder, the YAML reader, typed rows with their
sources, and the explanation record (shared by tables.py and return_codes.py, which
tables.py merges in: kept here so neither imports the other's loader)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

TABLES = Path(__file__).resolve().parent / "data"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
CODE = re.compile(r"^(?:\d{6}|E[0-9A-Z]\d{4}|W[0-9A-Z]\d{4})$")


class DoctorDataError(ValueError):
    """A doctor table that breaks its schema."""


@dataclass(frozen=True)
class Source:
    key: str
    repo: str | None = None
    path: str | None = None
    commit: str | None = None
    url: str | None = None
    package: str | None = None

    def cite(self) -> str:
        """One line naming the source: ``owner/repo:path@commit``, the URL, or
        ``package==X:path``."""
        if self.url:
            return self.url
        at = f"@{self.commit[:12]}" if self.commit else ""
        return f"{self.repo or self.package}:{self.path}{at}"


# -- generic row checking ---------------------------------------------------------------------


def _row(
    raw: Any, where: str, required: Mapping[str, Any], optional: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``raw`` as a dict with exactly the allowed keys, each of its type."""
    if not isinstance(raw, dict):
        raise DoctorDataError(f"{where}: expected a mapping, got {type(raw).__name__}")
    optional = optional or {}
    unknown = set(raw) - set(required) - set(optional)
    if unknown:
        raise DoctorDataError(f"{where}: unknown keys {sorted(unknown)}")
    for key in required:
        if key not in raw:
            raise DoctorDataError(f"{where}: missing key {key!r}")
    for key, value in raw.items():
        want = required.get(key, optional.get(key))
        if (
            isinstance(value, bool)
            and want is not bool
            and bool not in (want if isinstance(want, tuple) else (want,))
        ):
            raise DoctorDataError(f"{where}: {key} must not be a boolean")
        if value is not None and not isinstance(value, want):
            raise DoctorDataError(f"{where}: {key} has type {type(value).__name__}")
        if isinstance(value, str) and not value.strip():
            raise DoctorDataError(f"{where}: {key} is empty")
    return raw


def _read(name: str, folder: Path | None) -> dict[str, Any]:
    path = (folder or TABLES) / name
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    if not isinstance(data, dict):
        raise DoctorDataError(f"{name}: expected a mapping at the top")
    return data


def _sources(data: dict, name: str) -> dict[str, Source]:
    out: dict[str, Source] = {}
    raw = data.get("sources")
    if not isinstance(raw, dict) or not raw:
        raise DoctorDataError(f"{name}: no sources")
    for key, value in raw.items():
        where = f"{name}: source {key}"
        row = _row(value, where, {}, {"repo": str, "path": str, "commit": str, "url": str, "package": str})
        kinds = [k for k in ("repo", "url", "package") if row.get(k)]
        if len(kinds) != 1:
            raise DoctorDataError(f"{where}: give exactly one of repo, url, package")
        if kinds[0] != "url" and not row.get("path"):
            raise DoctorDataError(f"{where}: a {kinds[0]} source needs a path")
        if kinds[0] == "url" and not str(row["url"]).startswith("https://"):
            raise DoctorDataError(f"{where}: url must start with https://")
        if kinds[0] == "repo" and not re.match(r"^[\w.-]+/[\w.-]+$", row["repo"]):
            raise DoctorDataError(f"{where}: repo must be owner/name")
        if row.get("commit") and not re.match(r"^[0-9a-f]{40}$", row["commit"]):
            raise DoctorDataError(f"{where}: commit must be 40 hex digits")
        if kinds[0] == "package" and "==" not in row["package"]:
            raise DoctorDataError(f"{where}: package must be pinned (name==version)")
        out[str(key)] = Source(key=str(key), **row)
    return out


def _source(sources: dict[str, Source], key: Any, where: str) -> Source:
    if key not in sources:
        raise DoctorDataError(f"{where}: source {key!r} is not in sources")
    return sources[key]


def _source_list(sources: dict[str, Source], keys: Any, where: str) -> tuple[Source, ...]:
    if not isinstance(keys, list) or not keys:
        raise DoctorDataError(f"{where}: sources must be a non-empty list")
    return tuple(_source(sources, k, where) for k in keys)


def _open(name: str, folder: Path | None) -> tuple[dict[str, Any], dict[str, Source], set[str]]:
    """A table's data, its sources, and the set its rows add the keys they cite to."""
    data = _read(name, folder)
    return data, _sources(data, name), set()


def _unused(sources: dict[str, Source], used: set[str], name: str) -> None:
    spare = sorted(set(sources) - used)
    if spare:
        raise DoctorDataError(f"{name}: sources no row cites: {spare}")


# -- compat.yaml ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Explanation:
    """One row of errors.yaml: a code (``507015``, ``EI0006``) or a message (``id``)."""

    key: str  # the code, or the message id
    kind: str  # "acl" (6 digits: ACL, runtime, aclnn), "cann" (E-code), "hccl", "message", "torch_npu"
    title: str  # the symbolic name (ACL_ERROR_RT_AICORE_EXCEPTION, Resource_Busy ...)
    component: str
    meaning: str
    cause: str
    fix: str
    sources: tuple[Source, ...]
    pattern: re.Pattern | None = None
