"""``torch.npu`` memory functions, answered with this process's CPU figures: allocated is the
resident set size, the peak is the peak RSS, total is the machine's RAM. They show that the
calls work; they say nothing about NPU memory (docs/emulate.md)."""

from __future__ import annotations

import os
import resource
import types

EXPORTS = (
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_cached",
    "max_memory_cached",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "memory_summary",
    "memory_snapshot",
    "mem_get_info",
    "empty_cache",
    "reset_peak_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "reset_accumulated_memory_stats",
    "set_per_process_memory_fraction",
    "get_per_process_memory_fraction",
    "host_memory_stats",
    "host_empty_cache",
    "caching_allocator_alloc",
    "caching_allocator_delete",
    "get_allocator_backend",
)
_PAGE = os.sysconf("SC_PAGE_SIZE")
_STATE = {"fraction": 1.0, "peak_base": 0}


def total_bytes() -> int:
    return os.sysconf("SC_PHYS_PAGES") * _PAGE


def memory_allocated(device=None) -> int:
    with open("/proc/self/statm", encoding="ascii") as fh:
        return int(fh.read().split()[1]) * _PAGE


def max_memory_allocated(device=None) -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return int(max(peak - _STATE["peak_base"], memory_allocated()))


memory_reserved = memory_cached = memory_allocated
max_memory_reserved = max_memory_cached = max_memory_allocated


def memory_stats_as_nested_dict(device=None) -> dict:
    """The allocator statistics in the shape torch's allocators give them (current, peak,
    allocated, freed per pool): what ``torch.accelerator.memory_stats`` flattens."""
    cur, peak = memory_allocated(), max_memory_allocated()
    row = {"all": {"current": cur, "peak": peak, "allocated": peak, "freed": peak - cur}}
    return {
        "allocated_bytes": row,
        "reserved_bytes": row,
        "active_bytes": row,
        "requested_bytes": row,
        "num_alloc_retries": 0,
        "num_ooms": 0,
        "num_device_alloc": 0,
        "num_device_free": 0,
    }


def memory_stats(device=None) -> dict:
    flat: dict = {}

    def walk(prefix: str, value) -> None:
        if isinstance(value, dict):
            for key, nested in value.items():
                walk(f"{prefix}.{key}" if prefix else key, nested)
        else:
            flat[prefix] = value

    walk("", memory_stats_as_nested_dict(device))
    return dict(sorted(flat.items()))


host_memory_stats = memory_stats


def memory_summary(device=None, abbreviated=False) -> str:
    return (
        f"emulated NPU (CPU figures): allocated {memory_allocated() / 2**20:.0f} MiB, "
        f"peak {max_memory_allocated() / 2**20:.0f} MiB"
    )


def memory_snapshot() -> list:
    return []


def mem_get_info(device=None) -> tuple[int, int]:
    total = total_bytes()
    return max(total - memory_allocated(), 0), total


def _noop(*_a, **_k) -> None:
    return None


empty_cache = host_empty_cache = reset_max_memory_cached = reset_accumulated_memory_stats = _noop
caching_allocator_delete = _noop


def reset_peak_memory_stats(device=None) -> None:
    _STATE["peak_base"] = 0  # getrusage's peak cannot be reset; kept as is


reset_max_memory_allocated = reset_peak_memory_stats


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    _STATE["fraction"] = float(fraction)


def get_per_process_memory_fraction(device=None) -> float:
    return _STATE["fraction"]


def caching_allocator_alloc(size, device=None, stream=None) -> int:
    from migrate.emulate.callsite import not_emulated

    raise not_emulated("torch_npu.npu.caching_allocator_alloc")


def get_allocator_backend() -> str:
    return "native"


def module() -> types.ModuleType:
    mod = types.ModuleType("torch_npu.npu.memory", __doc__)
    for name in EXPORTS:
        setattr(mod, name, globals()[name])
    return mod
