"""The doctor's data: three YAML tables in ``migrate/doctor/data/``, each checked at load.

* ``compat.yaml`` — torch_npu releases: the torch each requires, the CANN it was published for;
* ``errors.yaml`` — CANN/ACL/HCCL/torch_npu error codes and messages: meaning, cause, fix
  (with ``return_codes.yaml``'s rows merged in: every code of the ACL, runtime, aclnn and
  HCCL headers, loaded by ``return_codes.py``);
* ``environment.yaml`` — where the Ascend stack installs itself and what its scripts set.

Every row names its public source (a key of the file's ``sources`` map: a repository file at
a commit, a file of a published package, or a URL). A row without a source, a source key
that does not resolve, an unknown key, a value of the wrong type, a version that does not
parse, a pattern that does not compile or a duplicate code fails the load with one line naming
the file, the row and the key (``DoctorDataError``): nothing is kept in step by hand.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from packaging.version import InvalidVersion, Version

from migrate.doctor.versions import CannVersion, parse_cann

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
class Release:
    torch_npu: Version
    torch: Version
    cann: CannVersion | None
    source: Source
    branch: str | None = None


@dataclass(frozen=True)
class CompatTable:
    releases: tuple[Release, ...]

    def release(self, torch_npu: Version) -> Release | None:
        """The row of this exact torch_npu release (local labels such as +gitabc ignored)."""
        public = Version(torch_npu.public)
        return next((r for r in self.releases if r.torch_npu == public), None)

    def for_torch(self, torch: Version) -> list[Release]:
        """Releases built for this torch release (2.14.0 for 2.14.0+cpu), newest first."""
        base = torch.release[:3]
        rows = [r for r in self.releases if r.torch.release[:3] == base]
        return sorted(rows, key=lambda r: r.torch_npu, reverse=True)

    def newest(self) -> Release:
        return max(self.releases, key=lambda r: r.torch_npu)


def _version(text: Any, where: str) -> Version:
    try:
        return Version(str(text))
    except InvalidVersion:
        raise DoctorDataError(f"{where}: {text!r} is not a PEP 440 version") from None


@cache
def compat_table(folder: Path | None = None) -> CompatTable:
    name = "compat.yaml"
    data, sources, used = _open(name, folder)
    rows, seen = [], set()
    for i, raw in enumerate(data.get("releases") or ()):
        where = f"{name}: releases[{i}]"
        row = _row(
            raw,
            where,
            {"torch_npu": str, "torch": str, "cann": (str, type(None)), "source": str},
            {"branch": str},
        )
        tnpu = _version(row["torch_npu"], where)
        if tnpu in seen:
            raise DoctorDataError(f"{where}: torch_npu {tnpu} listed twice")
        seen.add(tnpu)
        cann = None
        if row["cann"] is not None:
            cann = parse_cann(row["cann"])
            if cann is None:
                raise DoctorDataError(f"{where}: {row['cann']!r} is not a CANN release name")
        torch = _version(row["torch"], where)
        if tnpu.release[:2] != torch.release[:2]:
            raise DoctorDataError(f"{where}: torch_npu {tnpu} is not built for torch {torch}")
        used.add(row["source"])
        rows.append(Release(tnpu, torch, cann, _source(sources, row["source"], where), row.get("branch")))
    if not rows:
        raise DoctorDataError(f"{name}: no releases")
    _unused(sources, used, name)
    return CompatTable(tuple(rows))


# -- errors.yaml ------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class TorchNpuCodes:
    submodules: dict[int, tuple[str, str]]  # id -> (name, meaning)
    kinds: dict[int, tuple[str, str]]  # id -> (meaning, fix)
    source: Source


@dataclass(frozen=True)
class ErrorTable:
    codes: dict[str, Explanation]
    prefixes: tuple[tuple[str, str, Source], ...]  # (prefix, component, source)
    messages: tuple[Explanation, ...]
    torch_npu: TorchNpuCodes
    acl_classes: dict[int, str]  # first digit of an ACL code -> what that class means
    acl_class_source: Source
    sources: dict[str, Source]
    returns: Any = None  # return_codes.ReturnCodes: the header rows merged into codes

    def message(self, key: str) -> Explanation | None:
        return next((m for m in self.messages if m.key == key), None)

    def component_of(self, code: str) -> tuple[str, Source] | None:
        """The component a CANN E-code family belongs to (``EI`` -> HCCL)."""
        for prefix, component, source in self.prefixes:
            if code.startswith(prefix):
                return component, source
        return None


_TEXT = {"meaning": str, "cause": str, "fix": str, "sources": list}


@cache
def error_table(folder: Path | None = None) -> ErrorTable:
    name = "errors.yaml"
    data, sources, used = _open(name, folder)
    codes: dict[str, Explanation] = {}
    for i, raw in enumerate(data.get("codes") or ()):
        where = f"{name}: codes[{i}]"
        row = _row(raw, where, {"code": str, "name": str, "component": str, **_TEXT})
        code = row["code"]
        if not CODE.match(code):
            raise DoctorDataError(f"{where}: {code!r} is not an ACL code or a CANN E-code")
        if code in codes:
            raise DoctorDataError(f"{where}: code {code} listed twice")
        used.update(row["sources"])
        codes[code] = Explanation(
            code,
            "acl" if code.isdigit() else "cann",
            row["name"],
            row["component"],
            row["meaning"],
            row["cause"],
            row["fix"],
            _source_list(sources, row["sources"], where),
        )
    prefixes = []
    for i, raw in enumerate(data.get("prefixes") or ()):
        where = f"{name}: prefixes[{i}]"
        row = _row(raw, where, {"prefix": str, "component": str, "source": str})
        if not re.match(r"^[EW][0-9A-Z]$", row["prefix"]):
            raise DoctorDataError(f"{where}: prefix must be two characters such as EI")
        used.add(row["source"])
        prefixes.append((row["prefix"], row["component"], _source(sources, row["source"], where)))
    messages = _messages(data, sources, used, name)
    torch_npu = _torch_npu(data.get("torch_npu"), sources, name)
    used.add(torch_npu.source.key)
    where = f"{name}: acl_classes"
    raw_classes = _row(data.get("acl_classes"), where, {"source": str, "classes": list})
    classes = {}
    for i, item in enumerate(raw_classes["classes"]):
        row = _row(item, f"{where}.classes[{i}]", {"digit": int, "meaning": str})
        classes[row["digit"]] = row["meaning"]
    used.add(raw_classes["source"])
    unknown = set(data) - {"sources", "prefixes", "codes", "messages", "torch_npu", "acl_classes"}
    if unknown:
        raise DoctorDataError(f"{name}: unknown keys {sorted(unknown)}")
    _unused(sources, used, name)
    from migrate.doctor.return_codes import merge

    returns = merge(codes, folder)
    return ErrorTable(
        codes,
        tuple(prefixes),
        tuple(messages),
        torch_npu,
        classes,
        _source(sources, raw_classes["source"], where),
        sources,
        returns,
    )


def _messages(data: dict, sources: dict[str, Source], used: set, name: str) -> list[Explanation]:
    """The ``messages:`` rows: a pattern per log message the doctor explains."""
    messages: list[Explanation] = []
    ids: set[str] = set()
    for i, raw in enumerate(data.get("messages") or ()):
        where = f"{name}: messages[{i}]"
        row = _row(raw, where, {"id": str, "pattern": str, **_TEXT})
        if not re.match(r"^[a-z0-9]+(-[a-z0-9]+)*$", row["id"]) or row["id"] in ids:
            raise DoctorDataError(f"{where}: id {row['id']!r} is not kebab-case or is a repeat")
        ids.add(row["id"])
        try:
            pattern = re.compile(row["pattern"])
        except re.error as exc:
            raise DoctorDataError(f"{where}: pattern does not compile: {exc}") from None
        used.update(row["sources"])
        messages.append(
            Explanation(
                row["id"],
                "message",
                row["id"],
                "",
                row["meaning"],
                row["cause"],
                row["fix"],
                _source_list(sources, row["sources"], where),
                pattern,
            )
        )
    return messages


def _torch_npu(raw: Any, sources: dict[str, Source], name: str) -> TorchNpuCodes:
    where = f"{name}: torch_npu"
    row = _row(raw, where, {"source": str, "submodules": list, "kinds": list})
    subs, kinds = {}, {}
    for i, item in enumerate(row["submodules"]):
        sub = _row(item, f"{where}.submodules[{i}]", {"id": int, "name": str, "meaning": str})
        subs[sub["id"]] = (sub["name"], sub["meaning"])
    for i, item in enumerate(row["kinds"]):
        kind = _row(item, f"{where}.kinds[{i}]", {"id": int, "meaning": str, "fix": str})
        kinds[kind["id"]] = (kind["meaning"], kind["fix"])
    return TorchNpuCodes(subs, kinds, _source(sources, row["source"], where))


# -- environment.yaml -------------------------------------------------------------------------


@dataclass(frozen=True)
class Located:
    """A path (or name) the doctor looks at, with the source that says so."""

    path: str
    source: Source
    extra: dict[str, Any]


@dataclass(frozen=True)
class EnvironmentTable:
    install_roots: tuple[Located, ...]
    cann_homes: tuple[Located, ...]  # extra: set_env
    toolkit_info: Located  # extra: key
    kernels_info: Located
    driver_install_info: Located
    driver_info: Located
    firmware_info: Located
    variables: tuple[Located, ...]  # path: the variable name; extra: kind, unset
    home_dirs: tuple[Located, ...]
    libraries: tuple[Located, ...]  # path: the file name; extra: provider, required
    driver_lib_dirs: tuple[Located, ...]
    nnal: Located  # extra: set_env
    device_nodes: Located  # path: the node pattern; extra: shared
    visible_devices: Located  # path: the variable; extra: not_for_npu, sources
    autoload_switch: Located  # path: the variable; extra: disabled_by
    cann_python_deps: Located  # no path; extra: packages
    sources: dict[str, Source]

    def cite(self, key: str) -> str:
        return self.sources[key].cite()


@cache
def environment_table(folder: Path | None = None) -> EnvironmentTable:
    name = "environment.yaml"
    data, sources, used = _open(name, folder)

    def one(key: str, raw: Any, path_key: str | None, extra: dict[str, Any], idx: str = "") -> Located:
        """One entry: its path (or name) under ``path_key`` (None: it has none), its
        ``source`` or ``sources``, and the ``extra`` keys."""
        where = f"{name}: {key}{idx}"
        multi = "sources" in (raw or {}) if isinstance(raw, dict) else False
        spec = {**({path_key: str} if path_key else {}), **({"sources": list} if multi else {"source": str})}
        row = _row(raw, where, spec, extra)
        if multi:
            cited = _source_list(sources, row["sources"], where)
            used.update(row["sources"])
        else:
            cited = (_source(sources, row["source"], where),)
            used.add(row["source"])
        rest = {k: v for k, v in row.items() if k not in (path_key, "source", "sources")}
        return Located(row[path_key] if path_key else "", cited[0], {**rest, "sources": cited})

    def many(key: str, path_key: str, extra: dict[str, Any]) -> tuple[Located, ...]:
        rows = data.get(key)
        if not isinstance(rows, list) or not rows:
            raise DoctorDataError(f"{name}: {key} must be a non-empty list")
        return tuple(one(key, r, path_key, extra, f"[{i}]") for i, r in enumerate(rows))

    table = EnvironmentTable(
        install_roots=many("install_roots", "path", {}),
        cann_homes=many("cann_homes", "home", {"set_env": str}),
        toolkit_info=one("toolkit_info", data.get("toolkit_info"), "path", {"key": str}),
        kernels_info=one("kernels_info", data.get("kernels_info"), "path", {"key": str}),
        driver_install_info=one("driver_install_info", data.get("driver_install_info"), "path", {"key": str}),
        driver_info=one("driver_info", data.get("driver_info"), "path", {"key": str}),
        firmware_info=one("firmware_info", data.get("firmware_info"), "path", {"key": str}),
        variables=many("variables", "name", {"kind": str, "unset": str}),
        home_dirs=many("home_dirs", "path", {}),
        libraries=many("libraries", "name", {"provider": str, "required": bool}),
        driver_lib_dirs=many("driver_lib_dirs", "path", {}),
        nnal=one("nnal", data.get("nnal"), "path", {"set_env": str}),
        device_nodes=one("device_nodes", data.get("device_nodes"), "pattern", {"shared": list}),
        visible_devices=one(
            "visible_devices", data.get("visible_devices"), "variable", {"not_for_npu": list}
        ),
        autoload_switch=one("autoload_switch", data.get("autoload_switch"), "name", {"disabled_by": str}),
        cann_python_deps=one("cann_python_deps", data.get("cann_python_deps"), None, {"packages": list}),
        sources=sources,
    )
    for var in table.variables:
        if var.extra.get("unset") not in ("warn", "fail"):
            raise DoctorDataError(f"{name}: variable {var.path}: unset must be warn or fail")
    for lib in table.libraries:
        if lib.extra.get("provider") not in ("cann", "driver", "nnal"):
            raise DoctorDataError(f"{name}: library {lib.path}: provider must be cann, driver or nnal")
    try:
        re.compile(table.device_nodes.path)
    except re.error as exc:
        raise DoctorDataError(f"{name}: device_nodes pattern: {exc}") from None
    unknown = set(data) - set(EnvironmentTable.__dataclass_fields__)
    if unknown:
        raise DoctorDataError(f"{name}: unknown keys {sorted(unknown)}")
    _unused(sources, used, name)
    return table
