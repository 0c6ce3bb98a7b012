"""What detectors share: per-step figures of a group of device ops, their source lines,
number formatting for messages."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from migrate.perf.analyze.rank import Analysis
from migrate.perf.timeline import HostOp

__all__ = ["OpGroup", "device_groups", "host_locations", "launch_locations", "us"]


def us(value: float) -> str:
    """Microseconds for a message: "412 us", "3.2 ms", "1.75 s"."""
    if value >= 1e6:
        return f"{value / 1e6:.3g} s"
    if value >= 1e3:
        return f"{value / 1e3:.3g} ms"
    return f"{value:.3g} us"


def pct(share: float) -> str:
    return f"{100 * share:.1f}%"


@dataclass
class OpGroup:
    type: str
    count: int = 0
    total_us: float = 0.0
    dtypes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    indices: list[int] = field(default_factory=list)


def device_groups(a: Analysis, keep: Callable[[str, str, str], bool]) -> dict[str, OpGroup]:
    """Device ops in the steps for which ``keep(name, type, core)``, grouped by type."""
    cols, strings = a.tl.device_ops.cols, a.tl.strings
    groups: dict[str, OpGroup] = {}
    for i in a.ctx.ops_in_steps():
        name, kind, core = strings[cols["name"][i]], strings[cols["type"][i]], strings[cols["core"][i]]
        if not keep(name, kind, core):
            continue
        g = groups.setdefault(kind, OpGroup(kind))
        g.count += 1
        g.total_us += cols["dur"][i]
        if cols["dtypes"][i]:
            g.dtypes[strings[cols["dtypes"][i]]] += 1
        if len(g.indices) < 200:
            g.indices.append(i)
    return groups


def launch_locations(a: Analysis, indices: Iterable[int]) -> list[str]:
    """Source lines of the framework ops that launched the device ops ``indices``."""
    out: list[str] = []
    launcher = a.ctx.launcher
    for i in indices:
        h = launcher.get(i)
        if h is None:
            continue
        where = a.ctx.location(a.tl.host_ops.get(h))
        if where and where not in out:
            out.append(where)
        if len(out) >= 10:
            break
    return out


def host_locations(a: Analysis, ops: Iterable[HostOp]) -> list[str]:
    out: list[str] = []
    for op in ops:
        where = a.ctx.location(op)
        if where and where not in out:
            out.append(where)
        if len(out) >= 10:
            break
    return out


def launcher_names(a: Analysis, indices: Iterable[int]) -> list[str]:
    """The framework ops (aten::...) that launched the device ops ``indices``."""
    launcher = a.ctx.launcher
    names: dict[str, int] = defaultdict(int)
    for i in indices:
        h = launcher.get(i)
        if h is not None:
            names[a.tl.host_ops.get(h).name] += 1
    return [n for n, _ in sorted(names.items(), key=lambda kv: -kv[1])][:5]
