"""``torch.npu`` random-number functions.

NPU tensors draw from the CPU's default generator (their values are CPU tensors), so an
emulated run draws exactly what a CPU run of the original program draws. ``torch.manual_seed``
therefore seeds both; the ``torch.npu`` seeding functions are recorded and keep their own
``initial_seed`` but do not reseed the CPU generator. ``get_rng_state``/``set_rng_state``
read and write the generator actually used, so checkpoint resume round-trips.
"""

from __future__ import annotations

import types

import torch

EXPORTS = (
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "get_rng_state_all",
    "set_rng_state_all",
)
_SEED = {"value": 0}


def manual_seed(seed: int) -> None:
    _SEED["value"] = int(seed)


def manual_seed_all(seed: int) -> None:
    _SEED["value"] = int(seed)


def seed() -> None:
    _SEED["value"] = int(torch.seed())


seed_all = seed


def initial_seed() -> int:
    return _SEED["value"]


def get_rng_state(device="npu") -> torch.Tensor:
    return torch.get_rng_state()


def set_rng_state(new_state: torch.Tensor, device="npu") -> None:
    torch.set_rng_state(new_state.cpu() if new_state.device.type != "cpu" else new_state)


def get_rng_state_all() -> list[torch.Tensor]:
    from migrate.emulate.current import device_count

    return [get_rng_state() for _ in range(device_count())]


def set_rng_state_all(states) -> None:
    for state in list(states)[:1]:
        set_rng_state(state)


def generator() -> torch.Generator:
    """The NPU's default generator: the CPU's, which NPU tensors draw from."""
    return torch.default_generator


_BASE = torch.Generator


class _GeneratorType(type(_BASE)):  # type: ignore[misc]  # torch.Generator's metaclass
    """Keeps ``isinstance(g, torch.Generator)`` true for every generator, ours or torch's."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, _BASE)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, _BASE)


class Generator(_BASE, metaclass=_GeneratorType):
    """``torch.Generator(device="npu")``: a CPU generator (NPU tensors are drawn on the CPU)
    whose ``device`` is the NPU. Other devices get torch's own generator."""

    def __new__(cls, device="cpu"):
        from migrate.emulate.tensor import is_npu_device

        if not (is_npu_device(device) or isinstance(device, int)):  # an index: the accelerator
            return _BASE(device)
        return super().__new__(cls, "cpu")

    @property  # read-only: an NPU generator stays on the NPU
    def device(self) -> torch.device:  # type: ignore[override]
        return torch.device("npu", 0)


def install() -> None:
    """``torch.Generator`` accepts the npu device (idempotent)."""
    torch.Generator = Generator  # type: ignore[misc]  # the emulation patches torch


def module() -> types.ModuleType:
    mod = types.ModuleType("torch_npu.npu.random", __doc__)
    for name in EXPORTS:
        setattr(mod, name, globals()[name])
    return mod
