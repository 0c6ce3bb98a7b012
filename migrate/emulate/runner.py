"""Run a program under the emulation: ``python train.py ...``, ``python -m pkg ...``, a
console script, ``torchrun ...`` or ``pytest ...``: any command whose Python processes
import sitecustomize. The command runs as a child process with the boot folder first on
PYTHONPATH; each of its Python processes writes a report part; the parts are merged."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.emulate.activate import ENV, REPORT_ENV, TARGET_ENV
from migrate.emulate.leftovers import InductorCache
from migrate.emulate.report import merge, read_parts

BOOT = Path(__file__).resolve().parent / "boot"
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


_SIGNAL_NAMES = {int(s): s.name for s in signal.Signals}
KILL_AFTER = 10.0  # seconds a program has to end after a passed-on signal
POLL = 0.2  # seconds between looks at the program while no signal came


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
    paths = [str(BOOT), str(PACKAGE_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env.update({"PYTHONPATH": os.pathsep.join(paths), ENV: "npu", REPORT_ENV: str(report_dir)})
    if target:
        env[TARGET_ENV] = target
    return env


def run(
    command: list[str],
    target: str | None = None,
    cwd: Path | None = None,
    kill_after: float | None = None,
) -> dict:
    """Run ``command`` emulated; returns the merged report (docs/contracts.md §7).

    ``exit_code`` follows the shell: the program's own code, or 128+N when signal N ended
    it. While it runs, Ctrl-C reaches it directly (it shares our process group), and
    SIGTERM, SIGHUP and SIGQUIT sent to `migrate run` are passed on to it; a program still
    running ``kill_after`` seconds later (stuck in native code, where its Python handler
    never runs) is killed, as ``timeout --kill-after`` does."""
    from migrate.emulate.data import check_torch

    check_torch()
    kill_after = KILL_AFTER if kill_after is None else kill_after
    argv = resolve(command)
    with tempfile.TemporaryDirectory(prefix="migrate-emulate-", ignore_cleanup_errors=True) as tmp:
        env = environment(Path(tmp), target)
        cache = InductorCache(env)
        try:
            proc = subprocess.Popen(argv, env=env, cwd=cwd)
        except OSError as exc:
            raise UsageError(f"cannot run {command[0]}: {exc.strerror}") from None
        try:
            code, killed = _wait(proc, kill_after)
        finally:
            cache.clean()
        report = merge(read_parts(Path(tmp)), command, code, proc.pid)
    if killed is not None:
        report["notes"].append(
            f"the program was still running {kill_after:g} s after {killed} was passed "
            "on to it, and was killed"
        )
    elif code > 128 and code - 128 in _SIGNAL_NAMES:
        report["notes"].append(
            f"the program was ended by {_SIGNAL_NAMES[code - 128]}: what it "
            "did in its last moments may be missing"
        )
    return report


def _wait(proc: subprocess.Popen, kill_after: float) -> tuple[int, str | None]:
    """The program's exit status, and the name of the signal after which it had to be
    killed (None when it ended by itself)."""
    passed_on: list[int] = []

    def forward(signum, frame) -> None:
        passed_on.append(signum)
        try:
            proc.send_signal(signum)
        except OSError:
            pass

    passed = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, *passed)}
    killed = None
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal sends it to the program too
        for s in passed:
            signal.signal(s, forward)
        while not passed_on and proc.poll() is None:
            _wait_a_moment(proc)
        if passed_on:
            killed = _end(proc, kill_after, _SIGNAL_NAMES[passed_on[0]])
        code = proc.wait()
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    return (128 - code if code < 0 else code), killed


def _wait_a_moment(proc: subprocess.Popen) -> None:
    try:
        proc.wait(timeout=POLL)
    except subprocess.TimeoutExpired:
        pass


def _end(proc: subprocess.Popen, kill_after: float, signal_name: str) -> str | None:
    """Give the program ``kill_after`` seconds to end after a passed-on signal, then kill it."""
    try:
        proc.wait(timeout=kill_after)
        return None
    except subprocess.TimeoutExpired:
        for pid in [*_descendants(proc.pid), proc.pid]:  # torchrun's workers too
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return signal_name


def _descendants(root: int) -> list[int]:
    """The processes below ``root`` (Linux's /proc; none found elsewhere)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text()[:4096].rpartition(")")[2].split()
            children.setdefault(int(fields[1]), []).append(int(entry.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def check_report(report: Path | None, command: list[str]) -> Path | None:
    """Before the program starts: --report names a file we can write (its folder is made,
    as for -o) that is not one of the program's own files (the script, its arguments)."""
    from migrate.core.outputs import check_output

    if report is None:
        return None
    named = [Path(a) for a in command if a and not a.startswith("-") and os.path.isfile(a)]
    check_output(report, "--report", named)
    try:
        mode = os.stat(report).st_mode
    except OSError:
        mode = 0
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):  # the run's report writer blocked on it
        raise UsageError(f"--report {escape(str(report))}: a FIFO or socket; give a file name")
    try:
        report.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"--report {escape(str(report))}: cannot make its folder: {exc.strerror or exc}"
        ) from None
    if not os.access(report.parent, os.W_OK):
        raise UsageError(f"--report {escape(str(report))}: its folder is not writable")
    return report


def write(report: dict, path: Path) -> None:
    from migrate.core.outputs import write_output

    write_output(path, (json.dumps(report, indent=2) + "\n").encode("utf-8"), "--report")
