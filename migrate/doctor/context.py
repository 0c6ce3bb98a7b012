"""What the checks read, gathered once: the probed interpreter's packages, the import probe,
the Ascend install files. Each fact is computed on first use, so a check that is not run
costs nothing, and every check sees the same answer."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from migrate.doctor import install, probe
from migrate.doctor.tables import compat_table, environment_table, error_table

CORE = ("torch", "torch-npu", "torchvision", "torchaudio")
PATH_VARIABLES = ("LD_LIBRARY_PATH", "PYTHONPATH")  # read under --root for the probes (and ASCEND_*)


@dataclass
class Options:
    python: str  # the interpreter whose packages are checked
    root: Path = Path("/")  # the host under test: every path it names is read under it
    env: Mapping[str, str] | None = None  # the host's environment (default: os.environ)
    home: Path | None = None  # the host's "~", as the host names it (default: its $HOME)
    timeout: float = 120.0  # seconds for the import probe
    import_probe: bool = True  # run `import torch, torch_npu` in a subprocess
    project: Path | None = None  # a project whose requirement files to check


@dataclass(frozen=True)
class Dist:
    name: str
    version: Version | None
    version_text: str
    requires: tuple[str, ...]
    entry_points: tuple[tuple[str, ...], ...]  # (group, name, value)
    location: str
    raw: dict[str, Any]

    def requirement_on(self, name: str, markers: dict[str, str] | None = None) -> Requirement | None:
        """This distribution's requirement on ``name`` that applies without extras."""
        for text in self.requires:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if normalize(req.name) != name:
                continue
            if req.marker is not None:
                if "extra" in str(req.marker):
                    continue
                if markers is not None and not req.marker.evaluate(markers):
                    continue
            return req
        return None


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def normalize(name: str) -> str:
    """PEP 503 name normalization (torch_npu -> torch-npu)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except (InvalidVersion, TypeError):
        return None


@dataclass(frozen=True)
class TorchBuild:
    """Which accelerator a torch build is for, from its ``torch/version.py`` (read as text)."""

    kind: str  # "cpu", "cuda", "rocm", "xpu" or "unknown"
    detail: str  # "CUDA 13.0", "CPU"...

    @property
    def is_cpu(self) -> bool:
        return self.kind == "cpu"


_ASSIGN = re.compile(r"^(cuda|hip|xpu)\s*(?::[^=]*)?=\s*(?:'([^']*)'|\"([^\"]*)\"|None)", re.M)


def torch_build(version_py: str | None, version_text: str) -> TorchBuild:
    if version_py:
        found = {m.group(1): (m.group(2) or m.group(3)) for m in _ASSIGN.finditer(version_py)}
        if found.get("cuda"):
            return TorchBuild("cuda", f"CUDA {found['cuda']}")
        if found.get("hip"):
            return TorchBuild("rocm", f"ROCm {found['hip']}")
        if found.get("xpu"):
            return TorchBuild("xpu", f"XPU {found['xpu']}")
        if {"cuda", "hip"} <= set(found):
            return TorchBuild("cpu", "CPU")
    local = version_text.partition("+")[2]
    if local.startswith("cpu"):
        return TorchBuild("cpu", "CPU")
    if local.startswith("cu"):
        return TorchBuild("cuda", f"CUDA ({local})")
    if local.startswith("rocm"):
        return TorchBuild("rocm", f"ROCm ({local})")
    return TorchBuild("unknown", "unknown build (no torch/version.py)")


class Context:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.env: Mapping[str, str] = options.env if options.env is not None else os.environ
        home = options.home or Path(self.env.get("HOME") or Path.home())
        self.layout = install.Layout(options.root, home, self.env)

        self.compat = compat_table()
        self.errors = error_table()
        self.environment = environment_table()

    def show(self, path: str | Path) -> str:
        """``path`` (on this machine) as the host under test names it: what evidence and
        fixes print, so a fix is run on the host as written."""
        return self.layout.shown(path)

    def probe_env(self) -> dict[str, str]:
        """The environment the probes run the interpreter with: the host's, its path
        variables (LD_LIBRARY_PATH, PYTHONPATH, ASCEND_*) read under the root like every
        other path, so the import loads the host's libraries, not this machine's."""
        env = dict(self.env)
        if self.layout.is_identity:
            return env
        for key, value in env.items():
            if key in PATH_VARIABLES or key.startswith("ASCEND_"):
                env[key] = ":".join(
                    str(self.layout.host(part)) if part.startswith("/") else part for part in value.split(":")
                )
        return env

    # -- the interpreter's packages ------------------------------------------------------------
    def wanted(self) -> list[str]:
        from migrate.doctor.floors import npu_floors

        deps = self.environment.cann_python_deps.extra["packages"]
        return list(dict.fromkeys([*CORE, *npu_floors(), *map(str, deps)]))

    @cached_property
    def meta(self) -> dict[str, Any] | None:
        """The metadata probe's answer, or None when the interpreter could not be asked
        (``meta_error`` says why)."""
        try:
            return probe.metadata_facts(
                self.options.python, self.wanted(), self.probe_env(), min(60.0, self.options.timeout)
            )
        except probe.ProbeError as exc:
            self.meta_error = str(exc)
            return None

    meta_error: str | None = None

    @property
    def python(self) -> dict[str, Any]:
        if self.meta is None:
            return {"executable": self.options.python, "version": None, "machine": None}
        return dict(self.meta.get("python") or {})

    @property
    def markers(self) -> dict[str, str] | None:
        return (self.meta or {}).get("markers")

    def dist(self, name: str) -> Dist | None:
        """The installed distribution ``name`` as the probe described it (fields of the
        wrong shape, from a broken dist-info, read as empty)."""
        dists = (self.meta or {}).get("dists")
        raw = dists.get(name) if isinstance(dists, dict) else None
        if not isinstance(raw, dict) or "version" not in raw:
            return None
        text = str(raw.get("version") or "")
        eps = raw.get("entry_points")
        return Dist(
            str(raw.get("name") or name),
            _version(text),
            text,
            _strings(raw.get("requires")),
            tuple(_strings(ep) for ep in eps if isinstance(ep, list) and len(ep) == 3)
            if isinstance(eps, list)
            else (),
            str(raw.get("location") or ""),
            raw,
        )

    def dependents(self) -> dict[str, dict[str, Any]]:
        found = (self.meta or {}).get("dependents")
        if not isinstance(found, dict):
            return {}
        return {str(k): v for k, v in found.items() if isinstance(v, dict)}

    @cached_property
    def torch(self) -> Dist | None:
        return self.dist("torch")

    @cached_property
    def torch_npu(self) -> Dist | None:
        return self.dist("torch-npu")

    @cached_property
    def build(self) -> TorchBuild | None:
        if self.torch is None:
            return None
        return torch_build(self.torch.raw.get("version_py"), self.torch.version_text)

    def torch_npu_requires(self) -> SpecifierSet | None:
        """The torch specifier the installed torch_npu declares (``==2.14.0.*``)."""
        if self.torch_npu is None:
            return None
        req = self.torch_npu.requirement_on("torch", self.markers)
        return req.specifier if req is not None else None

    @property
    def arch(self) -> str | None:
        return self.python.get("machine") or None

    # -- the import probe --------------------------------------------------------------------
    @cached_property
    def imported(self) -> probe.ImportFacts | None:
        if not self.options.import_probe or self.torch is None:
            return None
        try:
            return probe.import_facts(self.options.python, self.probe_env(), self.options.timeout)
        except probe.ProbeError:
            return None

    # -- the Ascend install -------------------------------------------------------------------
    @cached_property
    def toolkits(self) -> list[install.CannInstall]:
        arches = (self.arch,) if self.arch in install.ARCHES else install.ARCHES
        return install.find_toolkits(self.layout, arches)

    @cached_property
    def cann(self) -> install.CannInstall | None:
        """The toolkit in use: the one ASCEND_HOME_PATH names, else the first found."""
        return self.toolkits[0] if self.toolkits else None

    @cached_property
    def driver(self) -> install.Driver:
        return install.find_driver(self.layout)

    @cached_property
    def nnal(self) -> tuple[Path, Path] | None:
        return install.find_nnal(self.layout)
