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

EXPORTS = ("manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
           "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all")
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


def module() -> types.ModuleType:
    mod = types.ModuleType("torch_npu.npu.random", __doc__)
    for name in EXPORTS:
        setattr(mod, name, globals()[name])
    return mod
