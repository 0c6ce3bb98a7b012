"""A command that runs the user's code in this process (``dump --model``, ``sensitivity``,
``replay``, ``bisect``, ``ops --torch``) must not end in silence when that code ends the
process: ``os._exit(0)`` in a model factory or a ``forward`` skips every ``finally`` and
``atexit`` handler, so the command would exit 0 with no report and no dump.

``report_user_exits(command)`` replaces ``os._exit`` while the command runs: called in this
process, it writes one line on stderr and ends the process with exit 2 (what the command
was writing is incomplete: it had not finished); in a forked child (a DataLoader worker,
the bounded children of core/isolate.py) it is ``os._exit`` itself. ``SystemExit`` needs no such guard:
the spec loader turns it into a usage error (core/model_spec.py).
"""

from __future__ import annotations

import os

USER_CODE_COMMANDS = frozenset({"dump", "replay", "sensitivity", "bisect", "ops"})


def report_user_exits(command: str) -> None:
    """From now on, ``os._exit`` called in this process is exit 2 with one line naming it."""
    real = os._exit
    owner = os.getpid()

    def _exit(code: int = 0) -> None:
        if os.getpid() == owner:
            line = (
                f"migrate: error: the user's code ended the process (os._exit({code!r})) "
                f"before `migrate {command}` finished (no report; what it was writing is incomplete)\n"
            )
            try:
                os.write(2, line.encode("utf-8", "backslashreplace"))
            except OSError:
                pass
            real(2)
        real(code)

    os._exit = _exit  # type: ignore[assignment]
