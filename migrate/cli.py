"""The `migrate` command line: parse, call, render. Each command lives in migrate/commands/."""

from __future__ import annotations

import errno
import functools
import os
import signal
import sys
import warnings

import typer

from migrate import __version__
from migrate.commands import apply as apply_cmd
from migrate.commands import bisect as bisect_cmd
from migrate.commands import doctor as doctor_cmd
from migrate.commands import ops as ops_cmd
from migrate.commands import perf as perf_cmd
from migrate.commands import precision as precision_cmd
from migrate.commands import rules as rules_cmd
from migrate.commands import run as run_cmd
from migrate.commands import scan as scan_cmd
from migrate.commands import sensitivity as sensitivity_cmd
from migrate.core.display import escape
from migrate.core.errors import UsageError
from migrate.core.user_exit import USER_CODE_COMMANDS, report_user_exits

_SETTINGS = dict(
    name="migrate",
    help="Move PyTorch projects from CUDA to Ascend NPUs (torch + torch_npu).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help strings are shown literally: "[tool.migrate]" stays
    context_settings={"help_option_names": ["-h", "--help"]},
)
app = typer.Typer(**_SETTINGS)  # type: ignore[arg-type]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ascend-migrate {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Move PyTorch projects from CUDA to Ascend NPUs (torch + torch_npu)."""


for module in (
    scan_cmd,
    apply_cmd,
    rules_cmd,
    ops_cmd,
    precision_cmd,
    run_cmd,
    sensitivity_cmd,
    doctor_cmd,
    bisect_cmd,
    perf_cmd,
):
    module.register(app)


# Optional dependencies, by top-level module, and the extra that installs them.
EXTRAS = {
    "torch": "torch",
    "safetensors": "torch",
    "numpy": "torch",
    "onnx": "onnx",
    "onnxruntime": "onnx",
    "onnxscript": "onnx",
    "onnx_ir": "onnx",
}


@functools.cache
def click_app(command: str = ""):
    """The click group that runs ``command``: the app with that command alone when it is
    one (typer builds every command's parameters from its signature, which costs more
    than a warm scan), else the whole app (top-level help, an unknown command)."""
    info = next((c for c in app.registered_commands if c.name == command), None)
    if info is None:
        return typer.main.get_command(app)
    alone = typer.Typer(**_SETTINGS)  # type: ignore[arg-type]
    alone.registered_callback = app.registered_callback
    alone.registered_commands = [info]
    return typer.main.get_command(alone)


def _safe_streams() -> None:
    """Non-UTF-8 file names (lone surrogates) are printed escaped, never a traceback."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            pass


def _on_sigterm(signum, frame) -> None:
    """SIGTERM unwinds like Ctrl-C, so a rewrite in progress removes its temporary file."""
    raise SystemExit(128 + signum)


def empty_argument(argv: list[str]) -> str | None:
    """The option (or "a path argument") given an empty value in ``argv``, or None.

    ``migrate apply $UNSET`` must not mean "the current folder": typer turns "" into
    Path("."), so empty values are refused here, before parsing. The words of the program
    that `migrate run` starts (after ``--`` or from its first word on) are its own."""
    command = argv[0] if argv else ""
    sub = click_app(command).commands.get(command) if command else None
    if sub is None:
        return None
    flags = {o for p in sub.params if getattr(p, "is_flag", False) for o in (*p.opts, *p.secondary_opts)} | {
        "-h",
        "--help",
    }
    wants_value = ""
    for arg in argv[1:]:
        if wants_value:
            if arg == "":
                return wants_value
            wants_value = ""
            continue
        if arg == "--":
            return None
        if arg == "":
            return "a path argument"
        if arg.startswith("-") and "=" in arg:
            if arg.partition("=")[2] == "":
                return arg.partition("=")[0]
        elif arg.startswith("-") and arg not in flags:
            wants_value = arg
        elif command == "run" and not arg.startswith("-"):
            return None  # the program's first word
    return None


def _quiet_user_code_warnings() -> None:
    """Parsing the user's code must not print warnings about it: Python 3.12+ warns
    (SyntaxWarning, shown by default) for every invalid escape such as ``"\\s"`` in the
    files a scan parses, from every worker. Findings are the tool's output, not those."""
    warnings.filterwarnings("ignore", category=SyntaxWarning)
    warnings.filterwarnings("ignore", message="invalid escape sequence", category=DeprecationWarning)


def main() -> None:
    _safe_streams()
    _quiet_user_code_warnings()
    signal.signal(signal.SIGTERM, _on_sigterm)
    empty = empty_argument(sys.argv[1:])
    if empty is not None:
        print(f"migrate: error: {empty}: empty value (an unset shell variable?)", file=sys.stderr)
        sys.exit(2)
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command in USER_CODE_COMMANDS:
        report_user_exits(command)
    try:
        _dispatch()
    except MemoryError:
        print("migrate: error: out of memory", file=sys.stderr)
        sys.exit(2)
    except OSError as exc:  # a file or folder the OS refused: name it, one line
        where = f": {escape(str(exc.filename))}" if exc.filename else ""
        print(f"migrate: error: {exc.strerror or exc}{where}", file=sys.stderr)
        sys.exit(2)
    except Exception as exc:  # noqa: BLE001 - a bug must still end in one line, not a traceback
        if os.environ.get("MIGRATE_DEBUG"):
            raise
        text = str(exc).strip().splitlines()
        print(
            f"migrate: error: internal error: {type(exc).__name__}: "
            f"{escape(text[0] if text else '')[:300]} (a bug: please report it; "
            "MIGRATE_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        sys.exit(2)


def _dispatch() -> None:
    try:
        click_app(sys.argv[1] if len(sys.argv) > 1 else "")()
    except UsageError as exc:
        print(f"migrate: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except ModuleNotFoundError as exc:
        root = (exc.name or "").split(".")[0]
        if root not in EXTRAS:
            raise
        print(
            f"migrate: error: this command needs {root}: pip install 'ascend-migrate[{EXTRAS[root]}]'",
            file=sys.stderr,
        )
        sys.exit(2)
    except KeyboardInterrupt:
        print("migrate: interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:
        from migrate.commands.output import quiet_stdout

        quiet_stdout()
        sys.exit(1)
    except OSError as exc:
        # EBADF: a stdout the caller closed (`>&-`, core/stdio.py)
        if exc.errno not in (errno.ENOSPC, errno.EIO, errno.EPIPE, errno.EDQUOT, errno.EBADF):
            raise
        from migrate.commands.output import quiet_stdout

        quiet_stdout()
        print(f"migrate: error: cannot write output: {exc.strerror}", file=sys.stderr)
        sys.exit(2)
    except SystemExit as exc:
        from migrate.commands.run import ProgramExit

        if exc.code in (130, 143) and not isinstance(exc, ProgramExit):
            # typer turns Ctrl-C into a silent Exit(130)
            print("migrate: interrupted", file=sys.stderr)
        _flush_stdout()
        raise
    _flush_stdout()


def _flush_stdout() -> None:
    """A full disk behind stdout is one clear line and exit 2, not a traceback at exit."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        from migrate.commands.output import quiet_stdout

        quiet_stdout()
        print(f"migrate: error: cannot write output: {exc.strerror}", file=sys.stderr)
        sys.exit(2)
