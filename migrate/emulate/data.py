"""The emulation's data: emulate.yaml beside this module, and the torch_npu API surface from
the op registry (``op_registry/aten/torch_npu-<version>/``: api.yaml, custom.yaml and
modules.yaml, all built from the wheel)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from migrate.core.errors import UsageError
from migrate.core.resources import op_registry_dir
from migrate.ops.registry import load_yaml

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Settings:
    also_tested_torch: tuple[str, ...]
    torch_npu: str
    device_count: int
    cross_device_ops: frozenset[str]
    host_copy_ops: dict[str, str]
    metadata_ops: frozenset[str]
    noop_ops: frozenset[str]
    unjudged_namespaces: frozenset[str]


@cache
def settings() -> Settings:
    raw = load_yaml(HERE / "emulate.yaml")
    try:
        return Settings(
            tuple(str(v) for v in raw["also_tested_torch"]),
            str(raw["torch_npu"]),
            int(raw["device_count"]),
            frozenset(raw["cross_device_ops"]),
            {str(k): str(v) for k, v in raw["host_copy_ops"].items()},
            frozenset(raw["metadata_ops"]),
            frozenset(raw["noop_ops"]),
            frozenset(raw["unjudged_namespaces"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{HERE / 'emulate.yaml'}: bad or missing key: {exc}") from exc


def load_yaml_section(name: str) -> dict:
    """A section of emulate.yaml that one module reads (``autocast``)."""
    raw = load_yaml(HERE / "emulate.yaml")
    if not isinstance(raw.get(name), dict):
        raise ValueError(f"{HERE / 'emulate.yaml'}: missing section {name!r}")
    return raw[name]


_PIN = re.compile(r"^torch\s*==\s*(\d+)\.(\d+)")


@cache
def pinned_torch() -> dict[str, str]:
    """torch major.minor -> the torch_npu release of the op registry that pins it (from its
    wheel's metadata, ``requires_torch`` in native.yaml)."""
    from migrate.ops.registry import load_aten, versions

    found = {}
    for name in versions("aten"):
        match = _PIN.match((load_aten(name).requires_torch or "").replace(" ", ""))
        if match:
            found[f"{match.group(1)}.{match.group(2)}"] = name.removeprefix("torch_npu-")
    return found


def supported_torch() -> list[str]:
    """torch releases (major.minor) the emulation runs on, oldest first."""
    found = set(pinned_torch()) | set(settings().also_tested_torch)
    return sorted(found, key=lambda v: tuple(int(p) for p in v.split(".")))


def check_torch() -> str:
    """The installed torch version, or a UsageError naming the supported ones."""
    try:
        import torch
    except ModuleNotFoundError:
        raise UsageError("--emulate needs torch: pip install 'ascend-migrate[torch]'") from None
    version = torch.__version__.split("+", 1)[0]
    major_minor = ".".join(version.split(".")[:2])
    wanted = supported_torch()
    if major_minor not in wanted and not os.environ.get("MIGRATE_EMULATE_ANY_TORCH"):
        pins = ", ".join(f"torch_npu {npu} pins {v}" for v, npu in pinned_torch().items())
        raise UsageError(
            f"NPU emulation supports torch {', '.join(wanted)} ({pins}; installed: "
            f"{version}); set MIGRATE_EMULATE_ANY_TORCH=1 to try anyway"
        )
    return version


@dataclass(frozen=True)
class Surface:
    """Public names of torch_npu, per module: ``modules["torch_npu.optim"] = {...}``."""

    version: str
    modules: dict[str, frozenset[str]]
    custom_ops: dict[str, str]  # exposed npu:: op -> schema

    def names(self, module: str) -> frozenset[str]:
        return self.modules.get(module, frozenset())


@cache
def surface(version: str | None = None) -> Surface:
    version = version or settings().torch_npu
    base = op_registry_dir() / "aten" / f"torch_npu-{version}"
    api = load_yaml(base / "api.yaml")
    custom = load_yaml(base / "custom.yaml").get("ops") or {}
    mods = load_yaml(base / "modules.yaml").get("modules") or {}
    modules = {name: frozenset(names or ()) for name, names in mods.items()}
    exposed = {op: row.get("schema", "") for op, row in custom.items() if row.get("exposed")}
    for key in ("torch_npu", "torch_npu.npu"):
        modules[key] = modules.get(key, frozenset()) | frozenset(api.get(key) or ())
    modules["torch_npu"] = modules["torch_npu"] | frozenset(exposed)
    return Surface(version, modules, exposed)
