"""Activates the NPU emulation in every Python process that ``migrate run --emulate npu``
starts (this folder is put first on PYTHONPATH). Chains to any other sitecustomize.

Ctrl-C while this runs (the program's start-up: torch is imported here) ends the process
as SIGINT ends it (exit 130 for ``migrate run``), not as Python does when ``site`` fails
("Fatal Python error: init_import_site", a traceback and exit 1)."""

import importlib.util
import os
import signal
import sys


def _die_of_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
    os._exit(130)  # where a signal cannot end the process


def _boot() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    me = sys.modules.pop("sitecustomize", None)
    path = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        if importlib.util.find_spec("sitecustomize") is not None:
            importlib.import_module("sitecustomize")
    except Exception:  # noqa: BLE001 - a broken user sitecustomize must not hide ours
        pass
    finally:
        sys.path[:] = path
        if me is not None:
            sys.modules["sitecustomize"] = me

    from migrate.emulate.activate import from_environment

    from_environment()


try:
    _boot()
except KeyboardInterrupt:
    _die_of_sigint()
