"""The emulation's data: emulate.yaml beside this module, and the torch_npu API surface from
the op registry (``op_registry/aten/torch_npu-<version>/``: api.yaml, custom.yaml and
modules.yaml, all built from the wheel)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from migrate.core.errors import UsageError
from migrate.core.resources import op_registry_dir
from migrate.ops.registry import load_yaml

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Settings:
    torch_versions: tuple[str, ...]
    torch_npu: str
    device_count: int
    cross_device_ops: frozenset[str]
    host_sync_ops: dict[str, str]
    metadata_ops: frozenset[str]
    noop_ops: frozenset[str]


@cache
def settings() -> Settings:
    raw = load_yaml(HERE / "emulate.yaml")
    try:
        return Settings(tuple(str(v) for v in raw["torch_versions"]), str(raw["torch_npu"]),
                        int(raw["device_count"]), frozenset(raw["cross_device_ops"]),
                        {str(k): str(v) for k, v in raw["host_sync_ops"].items()},
                        frozenset(raw["metadata_ops"]), frozenset(raw["noop_ops"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{HERE / 'emulate.yaml'}: bad or missing key: {exc}") from exc


def load_yaml_section(name: str) -> dict:
    """A section of emulate.yaml that one module reads (``autocast``)."""
    raw = load_yaml(HERE / "emulate.yaml")
    if not isinstance(raw.get(name), dict):
        raise ValueError(f"{HERE / 'emulate.yaml'}: missing section {name!r}")
    return raw[name]


def check_torch() -> str:
    """The installed torch version, or a UsageError naming the supported ones."""
    try:
        import torch
    except ModuleNotFoundError:
        raise UsageError("--emulate needs torch: pip install 'ascend-migrate[torch]'") from None
    version = torch.__version__.split("+", 1)[0]
    major_minor = ".".join(version.split(".")[:2])
    wanted = settings().torch_versions
    if major_minor not in wanted and not os.environ.get("MIGRATE_EMULATE_ANY_TORCH"):
        raise UsageError(f"NPU emulation supports torch {', '.join(wanted)} (installed: "
                         f"{version}); set MIGRATE_EMULATE_ANY_TORCH=1 to try anyway")
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
