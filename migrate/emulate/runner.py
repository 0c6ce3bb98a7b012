"""Run a program under the emulation: ``python train.py ...``, ``python -m pkg ...``, a
console script, ``torchrun ...`` or ``pytest ...``: any command whose Python processes
import sitecustomize. The command runs as a child process with the boot folder first on
PYTHONPATH; each of its Python processes writes a report part; the parts are merged."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from migrate.core.errors import UsageError
from migrate.emulate.activate import ENV, REPORT_ENV, TARGET_ENV
from migrate.emulate.report import merge, read_parts

BOOT = Path(__file__).resolve().parent / "boot"
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def resolve(command: list[str]) -> list[str]:
    if not command:
        raise UsageError("nothing to run: migrate run --emulate npu -- python train.py ARGS")
    exe = command[0]
    if exe in ("python", "python3") or Path(exe).name == Path(sys.executable).name:
        return [sys.executable, *command[1:]]
    if exe.endswith(".py") and Path(exe).is_file():
        return [sys.executable, *command]
    # a console script of this interpreter first (torchrun of the torch that runs migrate)
    found = shutil.which(exe, path=str(Path(sys.executable).parent)) or shutil.which(exe)
    if found is None:
        raise UsageError(f"command not found: {exe}")
    return [found, *command[1:]]


def environment(report_dir: Path, target: str | None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(BOOT), str(PACKAGE_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(
        os.pathsep) if p]
    env.update({"PYTHONPATH": os.pathsep.join(paths), ENV: "npu", REPORT_ENV: str(report_dir)})
    if target:
        env[TARGET_ENV] = target
    return env


def run(command: list[str], target: str | None = None, cwd: Path | None = None) -> dict:
    """Run ``command`` emulated; returns the merged report (docs/contracts.md §7)."""
    from migrate.emulate.data import check_torch

    check_torch()
    argv = resolve(command)
    with tempfile.TemporaryDirectory(prefix="migrate-emulate-") as tmp:
        try:
            proc = subprocess.run(argv, env=environment(Path(tmp), target), cwd=cwd)
        except OSError as exc:
            raise UsageError(f"cannot run {command[0]}: {exc.strerror}") from None
        report = merge(read_parts(Path(tmp)), command, proc.returncode)
    return report


def write(report: dict, path: Path) -> None:
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
