"""``torch.npu`` random-number functions.

NPU tensors draw from the CPU's default generator (their values are CPU tensors), so an
emulated run draws exactly what a CPU run of the original program draws. ``torch.manual_seed``
therefore seeds both; the ``torch.npu`` seeding functions are recorded and keep their own
``initial_seed`` but do not reseed the CPU generator.

``get_rng_state`` answers what torch_npu's NPU generator answers: 16 bytes, the seed and the
Philox offset (uint64, int64), which DTensor's ``OffsetBasedRNGTracker`` reads and moves per
shard. Each state handed out stands for the CPU generator's state at that moment (a new
offset whenever the CPU generator has drawn since), so ``set_rng_state`` of a state this
process handed out restores those exact CPU draws (checkpoint recompute, ``fork_rng``,
resume within the run); a state it never handed out (another rank's, an offset the tracker
computed for a shard, a checkpoint from another process) seeds the CPU generator from the
seed and offset alone, so every rank that sets it draws the same numbers. A full CPU
generator state (``torch.get_rng_state()``'s) is set as it is.
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
PHILOX_BYTES = 16  # torch_npu's NPUGeneratorImpl state: seed (uint64), offset (int64)
_MEMO_SIZE = 256


class _Philox:
    """The emulated NPU generator's (seed, offset) and the CPU states they stand for."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.offset = 0
        self.top = 0  # the largest offset handed out or set: new offsets go above it
        self.cpu: torch.Tensor | None = None  # the CPU state ``offset`` stands for
        self.memo: dict[tuple[int, int], torch.Tensor] = {}

    def remember(self, seed_: int, offset: int, cpu: torch.Tensor) -> None:
        self.offset, self.cpu, self.top = offset, cpu, max(self.top, offset)
        self.memo[(seed_, offset)] = cpu
        while len(self.memo) > _MEMO_SIZE:
            del self.memo[next(iter(self.memo))]

    def current(self) -> tuple[int, int]:
        cpu = torch.get_rng_state()
        if self.cpu is None:
            self.remember(_SEED["value"], self.offset, cpu)
        elif not torch.equal(cpu, self.cpu):  # drawn since: a later offset
            self.remember(_SEED["value"], self.top + 4, cpu)
        return _SEED["value"], self.offset

    def set(self, seed_: int, offset: int) -> None:
        cpu = self.memo.get((seed_, offset))
        if cpu is None:
            torch.default_generator.manual_seed(_mix(seed_, offset))
            cpu = torch.get_rng_state()
        else:
            torch.set_rng_state(cpu)
        _SEED["value"] = seed_
        self.remember(seed_, offset, cpu)


_PHILOX = _Philox()


def _mix(seed_: int, offset: int) -> int:
    """A CPU seed from an NPU (seed, offset): splitmix64 of both, the same on every rank."""
    x = (seed_ * 0x9E3779B97F4A7C15 + offset) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


def manual_seed(seed: int) -> None:
    _SEED["value"] = int(seed) & 0xFFFFFFFFFFFFFFFF
    _PHILOX.reset()


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def seed() -> None:
    manual_seed(torch.seed())


seed_all = seed


def initial_seed() -> int:
    return _SEED["value"]


def get_rng_state(device="npu") -> torch.Tensor:
    """The NPU generator's state as torch_npu gives it: a CPU uint8 tensor of 16 bytes."""
    seed_, offset = _PHILOX.current()
    return torch.tensor([seed_, offset], dtype=torch.uint64).view(torch.uint8)


def _plain(state) -> torch.Tensor:
    """A state as a plain contiguous CPU uint8 tensor (it may be an NPU tensor: DTensor's
    tracker moves states to the device and back)."""
    from migrate.emulate.tensor import NpuTensor

    if isinstance(state, NpuTensor):
        state = state._data
    if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8:
        raise TypeError("RNG state must be a torch.ByteTensor")
    return state.detach().to("cpu").contiguous()


def set_rng_state(new_state: torch.Tensor, device="npu") -> None:
    state = _plain(new_state)
    if state.numel() != PHILOX_BYTES:  # a CPU generator's own state
        torch.set_rng_state(state)
        return
    seed_, offset = (int(v) for v in state.view(torch.uint64))
    _PHILOX.set(seed_, offset & 0x7FFFFFFFFFFFFFFF)


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
        return super().__new__(cls, "cpu")  # type: ignore[call-arg]  # the stub types only __init__

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
