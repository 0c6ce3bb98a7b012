"""Turn the emulation on in this process: the npu device, the fake torch_npu, hccl, the
monitor, and (when ``$MIGRATE_EMULATE_REPORT_DIR`` is set) a report part written at exit.

``migrate run`` sets ``MIGRATE_EMULATE=npu`` and puts migrate/emulate/boot on PYTHONPATH, so
every Python process of the run (torchrun workers, DataLoader workers, subprocesses)
activates it from ``sitecustomize`` before the program's first line."""

from __future__ import annotations

import atexit
import json
import os
import sys
from pathlib import Path

ENV, REPORT_ENV, TARGET_ENV = "MIGRATE_EMULATE", "MIGRATE_EMULATE_REPORT_DIR", "MIGRATE_TARGET"


def activate(target: str | None = None):
    """Idempotent; returns the monitor's Record."""
    from migrate.emulate import backend, hccl, monitor, surface

    backend.install()
    surface.install_finder()
    hccl.install()
    return monitor.start(target)


def _write_part(folder: Path, rec) -> None:
    import torch

    from migrate.emulate.report import part

    rank = os.environ.get("RANK", "0")
    data = part(rec, rank, sys.argv, torch.__version__, rec.judge.reg.version)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".part-{os.getpid()}.tmp"
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, folder / f"part-{os.getpid()}.json")


def from_environment() -> None:
    """Called by sitecustomize: activate when the run asked for it, else do nothing."""
    if os.environ.get(ENV) != "npu":
        return
    try:
        rec = activate(os.environ.get(TARGET_ENV) or None)
    except Exception as exc:  # noqa: BLE001 - one clear line, then the program's own exit
        print(f"migrate: error: cannot emulate npu: {exc}", file=sys.stderr)
        sys.stderr.flush()
        os._exit(2)
    folder = os.environ.get(REPORT_ENV)
    if folder:
        pid = os.getpid()
        atexit.register(lambda: _write_part(Path(folder), rec) if os.getpid() == pid else None)
