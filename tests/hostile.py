"""Helpers for the hostile-input tests: run the CLI in a subprocess (with a timeout, so a
hang fails the test instead of stalling the suite), optionally as `nobody`."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import migrate as _package

REPO = Path(_package.__file__).resolve().parents[1]  # the checkout under test
CUDA = "import torch\ntorch.cuda.synchronize()\n"


def env(**extra: str) -> dict[str, str]:
    out = {**os.environ, "PYTHONPATH": str(REPO), "MIGRATE_CACHE_DIR": os.devnull + "-none"}
    out.update(extra)
    return out


def migrate(
    *args, timeout: float = 900, cwd=None, stdout=None, memory_mb: int | None = None, **extra_env
) -> subprocess.CompletedProcess:
    """``migrate ARGS`` in a subprocess; fails the test on a hang or a traceback.
    ``memory_mb`` caps the child's address space (unbounded memory fails, not the box)."""
    args = tuple(map(str, args))
    if args and args[0] in ("scan", "apply"):  # these tests check the NPU forms
        args = (args[0], "--target", "npu", *args[1:])
    r = subprocess.run(
        [sys.executable, "-m", "migrate", *args],
        cwd=cwd,
        env=env(**extra_env),
        timeout=timeout,
        stdout=stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        preexec_fn=_memory_cap(memory_mb),
    )
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    return r


def main(capsys, *args) -> tuple[int, str, str]:
    """``migrate ARGS`` in this process (no interpreter start, no re-import): (exit code,
    stdout, stderr). For inputs that cannot hang; those go through ``bounded_main()``."""
    capsys.readouterr()
    code = _main_code(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err


def bounded_main(*args, seconds: float = 900, memory_mb: int = 3072) -> tuple[int, str, str]:
    """``migrate ARGS`` in a forked child of this process (nothing re-imported: torch stays
    loaded) with a time and memory budget: (exit code, stdout, stderr). A hang or unbounded
    memory fails the test instead of the suite."""
    import io

    from migrate.core.isolate import Bounded, run_bounded

    def child() -> tuple[int, str, str]:
        raw = {name: io.BytesIO() for name in ("out", "err")}
        streams = {
            k: io.TextIOWrapper(v, encoding="utf-8", errors="backslashreplace", write_through=True)
            for k, v in raw.items()
        }
        sys.stdout, sys.stderr = streams["out"], streams["err"]
        try:
            code = _main_code(args)
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        for stream in streams.values():
            stream.flush()
        out, err = (raw[k].getvalue().decode("utf-8", "replace") for k in ("out", "err"))
        return code, out, err

    try:
        code, out, err = run_bounded(child, seconds=seconds, memory=memory_mb << 20)
    except Bounded as exc:
        raise AssertionError(f"migrate {' '.join(map(str, args))}: {exc}") from None
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err


def _main_code(args) -> int:
    import signal

    from migrate.cli import main as cli_main

    argv, handler = sys.argv, signal.getsignal(signal.SIGTERM)
    sys.argv = ["migrate", *map(str, args)]
    try:
        cli_main()
        return 0
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = argv
        signal.signal(signal.SIGTERM, handler)


def _memory_cap(memory_mb: int | None):
    if memory_mb is None:
        return None

    def cap() -> None:
        import resource

        limit = memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return cap


def as_nobody(fn, *args, timeout: float = 900):
    """``fn(*args)`` in a forked child that drops root to `nobody` with os.setuid; its
    (pickled) return value. Modules the call needs must be imported before (the
    interpreter's own files may not be readable by nobody)."""
    import pickle
    import select
    import signal

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            pw = pwd.getpwnam("nobody")
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
            try:
                result = ("ok", fn(*args))
            except BaseException as exc:
                result = ("raised", f"{type(exc).__name__}: {exc}")
            os.write(write_end, pickle.dumps(result))
        finally:
            os._exit(0)
    os.close(write_end)
    chunks = []
    while True:
        ready, _, _ = select.select([read_end], [], [], timeout)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            raise AssertionError("hung")
        data = os.read(read_end, 1 << 16)
        if not data:
            break
        chunks.append(data)
    os.close(read_end)
    os.waitpid(pid, 0)
    status, value = pickle.loads(b"".join(chunks))
    assert status == "ok", value
    return value


def can_drop_root() -> bool:
    if os.geteuid() != 0:
        return False
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        return False
    return True


# Minutes-long cases (a file with 100 000 findings): `pytest -m slow` with
# MIGRATE_HEAVY_TESTS=1 runs them; CI's share of time goes to the rest.
def heavy(test):
    skip = pytest.mark.skipif(
        not os.environ.get("MIGRATE_HEAVY_TESTS"), reason="minutes long: set MIGRATE_HEAVY_TESTS=1"
    )
    return pytest.mark.slow(skip(test))


needs_nobody = pytest.mark.skipif(not can_drop_root(), reason="needs root that can drop privileges to nobody")


def shared_dir() -> Path:
    """A world-traversable temporary folder (pytest's tmp_path is private to root)."""
    d = Path(tempfile.mkdtemp(prefix="migrate-hostile-"))
    os.chmod(d, 0o777)
    return d
