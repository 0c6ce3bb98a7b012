"""Ask the target interpreter about torch and torch_npu without importing anything here.

Two subprocesses of ``--python PATH`` (default: this interpreter), each with a timeout, its
output read in bounded chunks (a runaway child is killed, never buffered whole):

* :func:`metadata_facts` runs ``_probe_metadata.py``: distribution metadata only (versions,
  requirements, entry points, ``torch/version.py``), nothing imported;
* :func:`import_facts` runs ``_probe_import.py``: ``import torch`` / ``import torch_npu`` /
  ``torch.npu.is_available()``, which may crash or hang in native code (a missing
  libhccl.so, a device held by another process) — that is why it runs out of process.

Both run with ``-B`` (no bytecode written) in a private temporary folder as working
directory, and the import probe gets ``ASCEND_PROCESS_LOG_PATH`` pointing into that folder:
CANN writes its plog there instead of ``$HOME/ascend/log``, and the doctor reads those
logs for error codes before the folder is removed. The machine is left as it was found.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARK = "@@MIGRATE-DOCTOR@@"
OUTPUT_LIMIT = 1 << 20  # bytes kept of each stream
_HERE = Path(__file__).resolve().parent


class ProbeError(Exception):
    """The interpreter could not be run or gave no answer."""


@dataclass
class Ran:
    returncode: int | None  # None: killed after the timeout
    stdout: str
    stderr: str
    seconds: float
    truncated: bool = False

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def run_bounded(
    argv: list[str], *, env: dict[str, str], cwd: str, timeout: float, limit: int = OUTPUT_LIMIT
) -> Ran:
    """Run ``argv``; keep at most ``limit`` bytes of stdout and of stderr (the rest is read
    and dropped, so the child never blocks on a full pipe); kill its process group after
    ``timeout`` seconds. OSError when it cannot start."""
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    kept: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    size = {out_fd: 0, err_fd: 0}
    truncated = killed = False
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    sel.register(proc.stderr, selectors.EVENT_READ)
    deadline = start + timeout
    code: int | None = None
    try:
        while sel.get_map() and not killed:
            left = deadline - time.monotonic()
            if left <= 0:
                killed = True
                break
            for key, _ in sel.select(timeout=min(left, 0.5)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                room = limit - size[key.fd]
                if room > 0:
                    kept[key.fd].append(chunk[:room])
                    size[key.fd] += min(room, len(chunk))
                truncated = truncated or len(chunk) > room
        if not killed:
            try:
                code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                killed = True
    finally:
        sel.close()
        if killed or proc.poll() is None:
            _kill(proc)
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    text = {fd: b"".join(parts).decode("utf-8", "replace") for fd, parts in kept.items()}
    return Ran(None if killed else code, text[out_fd], text[err_fd], time.monotonic() - start, truncated)


def _kill(proc: subprocess.Popen) -> None:
    """Kill the child and everything it started (it leads its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def parse_mark(stdout: str) -> dict[str, Any] | None:
    """The JSON after the last marker line (libraries may print to stdout before it)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARK):
            try:
                value = json.loads(line[len(MARK) :])
            except json.JSONDecodeError:
                return None
            return value if isinstance(value, dict) else None
    return None


@dataclass
class ImportFacts:
    ran: Ran
    result: dict[str, Any] | None  # the probe's JSON; None when it crashed or hung
    logs: list[Path] = field(default_factory=list)  # CANN plogs the probe wrote (read, then gone)
    log_text: str = ""  # their bounded contents, for the error scanner


def _script(name: str) -> str:
    return (_HERE / name).read_text(encoding="utf-8")


def metadata_facts(
    python: str, names: list[str], env: dict[str, str], timeout: float = 60.0
) -> dict[str, Any]:
    """Package metadata of ``names`` in the target interpreter (``_probe_metadata.py``)."""
    with tempfile.TemporaryDirectory(prefix="migrate-doctor-") as tmp:
        try:
            ran = run_bounded(
                [python, "-B", "-c", _script("_probe_metadata.py"), *names],
                env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
                cwd=tmp,
                timeout=timeout,
            )
        except OSError as exc:
            raise ProbeError(f"cannot run {python}: {exc.strerror or exc}") from None
    facts = parse_mark(ran.stdout)
    if facts is None:
        why = "timed out" if ran.timed_out else f"exited with {ran.returncode}"
        tail = ran.stderr.strip().splitlines()[-1:] or ["no output"]
        raise ProbeError(f"{python} {why} while reading package metadata: {tail[0][:300]}")
    return facts


def import_facts(
    python: str, env: dict[str, str], timeout: float = 120.0, log_limit: int = 8 << 20
) -> ImportFacts:
    """Import torch and torch_npu in the target interpreter (``_probe_import.py``)."""
    with tempfile.TemporaryDirectory(prefix="migrate-doctor-") as tmp:
        logs = Path(tmp) / "ascend-log"
        child_env = {**env, "PYTHONDONTWRITEBYTECODE": "1", "ASCEND_PROCESS_LOG_PATH": str(logs)}
        try:
            ran = run_bounded(
                [python, "-B", "-c", _script("_probe_import.py")], env=child_env, cwd=tmp, timeout=timeout
            )
        except OSError as exc:
            raise ProbeError(f"cannot run {python}: {exc.strerror or exc}") from None
        found, text = _read_logs(logs, log_limit)
    return ImportFacts(ran, parse_mark(ran.stdout), found, text)


def _read_logs(folder: Path, limit: int) -> tuple[list[Path], str]:
    """The plog files CANN wrote under ``folder`` (regular files only, ``limit`` bytes in all)."""
    from migrate.core.fileio import SourceError, read_bytes

    found: list[Path] = []
    parts: list[str] = []
    left = limit
    if not folder.is_dir():
        return found, ""
    for path in sorted(folder.rglob("*.log"))[:200]:
        if left <= 0:
            break
        try:
            data, _ = read_bytes(path, limit=left)
        except SourceError:
            continue
        found.append(path.relative_to(folder))
        parts.append(data.decode("utf-8", "replace"))
        left -= len(data)
    return found, "\n".join(parts)
