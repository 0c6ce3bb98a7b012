"""``npu-smi info``, the driver's own account of the NPUs: found on the host's ``PATH``
(under ``--root``), run with a timeout and bounded output, its tables parsed.

The table, as the driver prints it (npu-smi 23.x-26.x; e.g. vllm-project/vllm-ascend
issues 4284 and 12980, Project-HAMi/HAMi-WebUI issue 47), is two rows per chip::

    | NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
    | Chip  [Phy-ID]            | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
    | 0     910B2               | OK            | 98.1        32                0    / 0             |
    | 0                         | 0000:C1:00.0  | 0           0    / 0          3382 / 65536         |

then a process table (``| NPU Chip | Process id | Process name | Process memory(MB) |`` rows,
or ``No running processes found in NPU N``). Chips without HBM (Atlas 300I, 310P) print
``Memory-Usage(MB)`` only: the last ``used / total`` pair of the second row is the device
memory either way.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from migrate.doctor.install import Layout
from migrate.doctor.probe import run_bounded

TIMEOUT = 30.0  # seconds npu-smi may take (it waits on the driver)
LIMIT = 256 * 1024  # bytes of its output kept
HEALTHY = "OK"

_CELLS = re.compile(r"^\|(.*)\|\s*$")
_PAIR = re.compile(r"(\d+)\s*/\s*(\d+)")
_BUS = re.compile(r"^[0-9A-Fa-fx]{4}:[0-9A-Fa-fx]{2}:[0-9A-Fa-fx]{2}\.[0-9A-Fa-fx]$")


@dataclass
class Chip:
    npu: int
    chip: int
    name: str
    health: str
    bus: str
    memory_used: int | None  # MB: HBM where the chip has it, else its device memory
    memory_total: int | None

    @property
    def label(self) -> str:
        return f"NPU {self.npu} chip {self.chip}"


@dataclass
class Process:
    npu: int
    chip: int
    pid: int
    name: str
    memory: int | None  # MB


@dataclass
class SmiInfo:
    version: str | None
    chips: list[Chip] = field(default_factory=list)
    processes: list[Process] = field(default_factory=list)


def find(layout: Layout) -> Path | None:
    """The first executable regular file ``npu-smi`` on the host's PATH (read under the
    root)."""
    for entry in (layout.env.get("PATH") or "").split(":"):
        if not entry.startswith("/"):
            continue  # a relative PATH entry names this process's folder, not the host's
        candidate = layout.host(f"{entry.rstrip('/')}/npu-smi")
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and os.access(candidate, os.X_OK):
            return candidate
    return None


def run(path: Path, env: dict[str, str]) -> tuple[int | None, str, str]:
    """(exit status or None after the timeout, stdout, stderr) of ``npu-smi info``."""
    with tempfile.TemporaryDirectory(prefix="migrate-npu-smi-") as tmp:
        ran = run_bounded([str(path), "info"], env=env, cwd=tmp, timeout=TIMEOUT, limit=LIMIT)
    return ran.returncode, ran.stdout, ran.stderr


def _cells(line: str) -> list[str] | None:
    m = _CELLS.match(line.strip())
    return [c.strip() for c in m.group(1).split("|")] if m else None


def parse(text: str) -> SmiInfo:
    """The chips and processes ``npu-smi info`` printed (rows it does not understand are
    skipped: the table grows columns between driver releases)."""
    version = re.search(r"npu-smi\s+(\S+)", text)
    info = SmiInfo(version.group(1) if version else None)
    pending: list[str] | None = None
    for line in text.splitlines():
        cells = _cells(line)
        if cells is None:
            continue
        if len(cells) >= 4 and cells[1].isdigit():
            _process(info, cells)
            pending = None
            continue
        if len(cells) != 3:
            pending = None
            continue
        head = cells[0].split()
        if pending is None:
            if len(head) >= 2 and head[0].isdigit() and cells[1] and not cells[1].startswith("Bus"):
                pending = cells
            continue
        first, pending = pending, None
        if head and head[0].isdigit() and _BUS.match(cells[1]):
            pairs = _PAIR.findall(cells[2])
            used, total = (int(pairs[-1][0]), int(pairs[-1][1])) if pairs else (None, None)
            npu_head = first[0].split(None, 1)
            info.chips.append(
                Chip(int(npu_head[0]), int(head[0]), npu_head[1], first[1], cells[1], used, total)
            )
    return info


def _process(info: SmiInfo, cells: list[str]) -> None:
    """``| NPU Chip | Process id | Process name | Process memory(MB) | ... |``."""
    ids = cells[0].split()
    if len(ids) < 2 or not (ids[0].isdigit() and ids[1].isdigit()):
        return
    memory = cells[3].split()[0] if cells[3] else ""
    info.processes.append(
        Process(int(ids[0]), int(ids[1]), int(cells[1]), cells[2], int(memory) if memory.isdigit() else None)
    )
