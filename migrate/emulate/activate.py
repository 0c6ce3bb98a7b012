"""Turn the emulation on in this process: the npu device, the fake torch_npu, the apex
stand-in (when no apex is importable), hccl, the monitor, and (when
``$MIGRATE_EMULATE_REPORT_DIR`` is set) a report part written at exit.

``migrate run`` sets ``MIGRATE_EMULATE=npu`` and puts migrate/emulate/boot on PYTHONPATH, so
every Python process of the run (torchrun workers, DataLoader workers, subprocesses)
activates it from ``sitecustomize`` before the program's first line. Each process's report
part is kept current while it runs (PartWriter): the parent merges what is there, however
the program ended. The part also says how its process ended (``end``): the code it
passed to ``os._exit`` or a multiprocessing worker returned, the unhandled exception that
ended it, SIGTERM, or a normal interpreter exit; a part with no end was cut short (SIGKILL,
a crash in native code, or still running when the program ended)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ENV, REPORT_ENV, TARGET_ENV = "MIGRATE_EMULATE", "MIGRATE_EMULATE_REPORT_DIR", "MIGRATE_TARGET"


def activate(target: str | None = None):
    """Idempotent; returns the monitor's Record."""
    from migrate.emulate import apex, backend, hccl, monitor, surface

    backend.install()
    surface.install_finder()
    apex.install()  # last on sys.meta_path: never in front of a real apex
    hccl.install()
    return monitor.start(target)


class PartWriter:
    """Writes this process's report part (``part-<pid>.json``, atomically) so that it
    survives the ways a program ends: at exit, in ``os._exit`` (multiprocessing's fork
    workers end that way), on SIGTERM (then the signal is re-raised: the exit status stays
    the shell's 128+15), and every FLUSH seconds from a daemon thread, so a SIGKILL loses
    at most the last moments. A fork starts the child's own part from an empty record.
    ``end`` says how the process ended, as far as it could see (``ended``)."""

    FLUSH = 0.2

    def __init__(self, folder: Path, rec) -> None:
        import threading

        self.folder, self.rec = folder, rec
        self.lock = threading.RLock()  # re-entrant: SIGTERM may arrive mid-write
        self.written: tuple | None = None
        self.pid = os.getpid()
        self.end: dict | None = None
        self.worker = False

    def state(self) -> tuple:
        rec = self.rec
        return (
            len(rec.ops),
            sum(rec.ops.values()),
            len(rec.findings),
            sum(r["count"] for r in list(rec.findings.values())),
            rec.perf.state(),
            len(rec.notes),
            repr(self.end),
            self.worker,
        )

    def write(self, force: bool = False) -> None:
        with self.lock:
            state = self.state()
            if state == self.written and not force:
                return
            _write_part(self.folder, self.rec, self.end, self.worker)
            self.written = state

    def safe_write(self, force: bool = False) -> None:
        try:
            self.write(force)
        except Exception:  # noqa: BLE001 - a report problem must not change the program's end
            pass

    def ended(self, **how: Any) -> None:
        """Record how this process ends; a later word replaces an earlier one (the code
        ``os._exit`` gets is the last word of a forked worker)."""
        self.end = {**(self.end or {}), **how}

    def _at_exit(self) -> None:
        if self.end is None:
            self.ended(exit_code=None)  # through the interpreter: sys.exit's code is not seen
        self.safe_write(True)

    def start(self) -> None:
        import atexit
        import signal
        import threading

        atexit.register(self._at_exit)
        real_exit = os._exit

        def _exit(code: int = 0) -> None:
            self.ended(exit_code=code)
            self.safe_write(True)
            real_exit(code)

        os._exit = _exit  # type: ignore[assignment]
        self._watch_exceptions()
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        ):
            signal.signal(signal.SIGTERM, self._on_term)
        os.register_at_fork(
            before=self.lock.acquire, after_in_parent=self.lock.release, after_in_child=self._forked
        )
        self._thread()

    def _watch_exceptions(self) -> None:
        """The exception that ends the main thread (exit code 1), and the exception or exit
        code of a multiprocessing worker (its ``_bootstrap`` catches the exception itself
        and returns the code, under fork, spawn and forkserver alike)."""
        import multiprocessing.process

        earlier_hook = sys.excepthook

        def excepthook(kind, exc, tb) -> None:
            code = {} if issubclass(kind, KeyboardInterrupt) else {"exit_code": 1}
            self.ended(exception=_described(exc), **code)
            earlier_hook(kind, exc, tb)

        sys.excepthook = excepthook
        process = multiprocessing.process.BaseProcess
        bootstrap = process._bootstrap
        writer = self

        def _bootstrap(proc, *args: Any, **kwargs: Any) -> int:
            writer.worker = True
            run = proc.run

            def watched_run() -> Any:
                try:
                    return run()
                except SystemExit:  # its code is what _bootstrap returns
                    raise
                except BaseException as exc:
                    writer.ended(exception=_described(exc))
                    raise

            proc.run = watched_run
            code = bootstrap(proc, *args, **kwargs)
            writer.ended(exit_code=code)
            return code

        process._bootstrap = _bootstrap

    def _on_term(self, signum, frame) -> None:
        import signal

        self.ended(signal="SIGTERM")
        self.safe_write(True)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    def _forked(self) -> None:
        import threading

        self.lock = threading.RLock()  # the parent's may have been held by its flusher
        rec = self.rec
        rec.ops.clear()
        rec.threads.clear()
        rec.findings.clear()
        rec.notes.clear()
        self.pid, self.end, self.worker = os.getpid(), None, False
        self.written = self.state()  # an idle child (one that execs at once) writes no part
        self._thread()

    def _thread(self) -> None:
        import threading
        import time

        def loop() -> None:
            while True:
                time.sleep(self.FLUSH)
                self.safe_write()

        threading.Thread(target=loop, name="migrate-report", daemon=True).start()


def _described(exc: BaseException) -> str:
    """``Type: message``, one line, at most 300 characters (a report line, not a log)."""
    try:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    except Exception:  # noqa: BLE001 - a __str__ that raises still names its type
        text = type(exc).__name__
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:299] + "\u2026"


def _write_part(folder: Path, rec, end: dict | None = None, worker: bool = False) -> None:
    import torch

    from migrate.emulate.report import part

    rank = os.environ.get("RANK", "0")
    data = part(rec, rank, sys.argv, torch.__version__, rec.judge.reg.version, end, worker)
    # No mkdir: the run made the folder and removes it once it has merged the parts; a
    # process that outlives the run (a spawn resource tracker, a detached child) finds it
    # gone and writes nothing, rather than leaving a new folder behind.
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
        PartWriter(Path(folder), rec).start()
