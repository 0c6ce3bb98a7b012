"""`python -m migrate` and the `migrate` console script.

Ctrl-C or SIGTERM while the command line is still being imported ends quietly (one line,
exit 130/143) instead of printing an import traceback; migrate.cli.main then installs its
own handling."""

from __future__ import annotations

import signal
import sys


def _early_exit(signum, frame) -> None:
    sys.stderr.write("migrate: interrupted\n")
    raise SystemExit(128 + signum)


def main() -> None:
    signal.signal(signal.SIGINT, _early_exit)
    signal.signal(signal.SIGTERM, _early_exit)
    from migrate.core import own_process, stdio

    stdio.guard()  # `migrate scan a.py >&-`: exit 2 with one line, never a traceback

    own = bool(sys.argv[1:2]) and sys.argv[1] in own_process.COMMANDS
    if own:
        own_process.fewer_collections()
    from migrate.scan import run_memo

    run_memo.entry_argv = sys.argv[1:]
    replayed = run_memo.replay(run_memo.entry_argv)  # a scan of files that did not change
    if replayed is not None:
        sys.exit(replayed)
    from migrate.cli import main as cli_main

    signal.signal(signal.SIGINT, signal.default_int_handler)
    status: object = 0
    try:
        cli_main()
    except SystemExit as exc:
        status = exc.code
        if not own:
            raise
    finally:
        # The work is done (or has unwound): a signal now must not turn the exit status
        # into a bare kill (-2) while the interpreter shuts down.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if own:
        own_process.hard_exit(status)


if __name__ == "__main__":
    main()
