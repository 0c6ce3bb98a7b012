"""Read what the Ascend installers leave on disk: CANN toolkit, kernels, driver, firmware, NNAL.

Every location comes from ``data/environment.yaml``. There is one host under test, the tree
at ``--root`` (default ``/``): every path it names, a table's system path, ``~`` (its
``$HOME``) and a path taken from an environment variable (``ASCEND_HOME_PATH``,
``LD_LIBRARY_PATH`` entries...) alike, is read under the root, with its symlinks resolved
inside the root (an absolute link target is the host's, not this machine's); a path is
shown, in evidence and fixes, as the host names it (``Layout.shown``: the root taken off).
Install records are small ``key=value`` files (``ascend_toolkit_install.info``,
``version.info``); they are read as regular files only, at most 64 KiB each, so a FIFO or
``/dev/zero`` planted under that name is reported, never read forever.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from migrate.core.fileio import SourceError, read_bytes
from migrate.doctor.tables import EnvironmentTable, environment_table
from migrate.doctor.versions import CannVersion, parse_cann

INFO_LIMIT = 64 * 1024
ARCHES = ("aarch64", "x86_64")


@dataclass
class InfoFile:
    """One ``key=value`` install record: keys lower-cased, surrounding quotes dropped."""

    path: Path
    values: dict[str, str] = field(default_factory=dict)
    error: str | None = None  # why it could not be read (None: read)

    def get(self, key: str) -> str | None:
        return self.values.get(key.lower())


def read_info(path: Path) -> InfoFile | None:
    """The record at ``path``; None when nothing is there, an InfoFile with ``error`` when
    something is there that cannot be read."""
    if not os.path.lexists(path):
        return None
    try:
        data, _ = read_bytes(path, limit=INFO_LIMIT)
    except SourceError as exc:
        return InfoFile(path, error=str(exc))
    values: dict[str, str] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values.setdefault(key.strip().lower(), value)
    return InfoFile(path, values)


MAX_LINKS = 40  # symlinks followed while resolving one path under the root (the kernel's limit)


@dataclass
class Layout:
    """Where to look: the root of the host under test, its home, its environment."""

    root: Path
    home: Path  # the host's home folder, as the host names it (``/root``)
    env: Mapping[str, str]
    table: EnvironmentTable = field(default_factory=environment_table)

    def system(self, path: str) -> Path:
        """A table path on this machine: ``/x`` under the root, ``~/x`` under the home."""
        if path.startswith("~/"):
            return self.host(self.home / path[2:])
        return self.host(path)

    def host(self, path: str | Path) -> Path:
        """A path the host under test names (an environment value, a record's path) as this
        machine reaches it: under the root, symlinks resolved inside the root. A relative
        path stays relative (the loader reads it against the working folder)."""
        text = str(path)
        if not text.startswith("/"):
            return Path(text)
        if self.is_identity:
            return Path(text)
        return _resolve_under(self.root, text)

    @property
    def is_identity(self) -> bool:
        return os.path.realpath(self.root) == "/"

    def shown(self, path: str | Path) -> str:
        """A path on this machine as the host under test names it: the root taken off."""
        text = str(path)
        if self.is_identity:
            return text
        root = str(self.root).rstrip("/")
        if text == root:
            return "/"
        if text.startswith(root + "/"):
            return text[len(root) :]
        return text

    def install_roots(self) -> list[Path]:
        return [self.system(r.path) for r in self.table.install_roots]


def _resolve_under(root: Path, path: str) -> Path:
    """``path`` (absolute, as the host names it) under ``root``, resolving each symlink
    as the host would: an absolute target starts again at the root, ``..`` stops at it.
    The last component is kept when it is a dangling link (callers test for it)."""
    parts = [p for p in path.split("/") if p]
    done: list[str] = []
    links = 0
    while parts:
        name = parts.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            if done:
                done.pop()
            continue
        here = root.joinpath(*done, name)
        if links < MAX_LINKS and os.path.islink(here):
            links += 1
            try:
                target = os.readlink(here)
            except OSError:
                done.append(name)
                continue
            if target.startswith("/"):
                done = []
            parts = [p for p in target.split("/") if p] + parts
            continue
        done.append(name)
    return root.joinpath(*done)


@dataclass
class CannInstall:
    home: Path  # the CANN home (what ASCEND_HOME_PATH should be)
    info: InfoFile | None  # ascend_toolkit_install.info
    set_env: Path | None  # the script that sets the environment for it
    via: str  # how it was found: an environment variable, or "default location"

    @property
    def version_text(self) -> str | None:
        return self.info.get(environment_table().toolkit_info.extra["key"]) if self.info else None

    @property
    def version(self) -> CannVersion | None:
        return parse_cann(self.version_text)


def find_toolkits(layout: Layout, arches: tuple[str, ...] = ARCHES) -> list[CannInstall]:
    """CANN homes with a toolkit install record: those the environment names first
    (ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME), then the default locations; one entry per
    real folder."""
    table = layout.table
    candidates: list[tuple[Path, str, Path | None]] = []
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        value = layout.env.get(var)
        if value:
            candidates.append((layout.host(value), var, None))
    for root in layout.install_roots():
        for spec in table.cann_homes:
            candidates.append((root / spec.path, "default location", root / spec.extra["set_env"]))
    found: list[CannInstall] = []
    seen: set[str] = set()
    for home, via, set_env in candidates:
        info = _toolkit_info(home, arches)
        if info is None:
            continue
        key = os.path.realpath(home)
        if key in seen:
            continue
        seen.add(key)
        found.append(CannInstall(home, info, set_env or _nearby_set_env(home), via))
    return found


def _toolkit_info(home: Path, arches: tuple[str, ...]) -> InfoFile | None:
    template = environment_table().toolkit_info.path
    paths = [home / template.format(arch=arch) for arch in arches]
    paths.append(home / Path(template).name)  # ASCEND_HOME_PATH may be the <arch>-linux folder
    for path in paths:
        info = read_info(path)
        if info is not None:
            return info
    return None


def _nearby_set_env(home: Path) -> Path | None:
    """The set_env.sh that sets ``home``: in it, or one or two folders up
    (``ascend-toolkit/latest`` -> ``ascend-toolkit/set_env.sh``)."""
    for folder in (home, home.parent, home.parent.parent):
        script = folder / "set_env.sh"
        if script.is_file():
            return script
    return None


@dataclass
class Kernels:
    info: InfoFile

    @property
    def release(self) -> str | None:
        return self.info.get(environment_table().kernels_info.extra["key"])

    @property
    def toolkit_range(self) -> str | None:
        """``>=7.6, <=8.3``: the toolkit releases this kernels package declares it needs."""
        return self.info.get("required_package_toolkit_version")


def find_kernels(cann: CannInstall) -> Kernels | None:
    info = read_info(cann.home / environment_table().kernels_info.path)
    return Kernels(info) if info is not None else None


@dataclass
class Driver:
    base: Path  # the install path the driver was installed under
    info: InfoFile | None  # driver/version.info
    firmware: InfoFile | None  # firmware/version.info
    install_info: InfoFile | None  # /etc/ascend_install.info

    @property
    def version(self) -> str | None:
        return self.info.get(environment_table().driver_info.extra["key"]) if self.info else None

    @property
    def firmware_version(self) -> str | None:
        key = environment_table().firmware_info.extra["key"]
        return self.firmware.get(key) if self.firmware else None


def find_driver(layout: Layout) -> Driver:
    table = layout.table
    install_info = read_info(layout.system(table.driver_install_info.path))
    base = layout.system("/usr/local/Ascend")
    named = install_info.get(table.driver_install_info.extra["key"]) if install_info else None
    if named:
        base = layout.host(named if named.startswith("/") else "/" + named)
    return Driver(
        base,
        read_info(base / table.driver_info.path),
        read_info(base / table.firmware_info.path),
        install_info,
    )


def find_nnal(layout: Layout) -> tuple[Path, Path] | None:
    """(NNAL folder, its set_env.sh) under the first install root that has it."""
    nnal = layout.table.nnal
    for root in layout.install_roots():
        folder = root / nnal.path
        if folder.is_dir():
            return folder, root / nnal.extra["set_env"]
    return None
