"""The `migrate` command line: parse, call, render. Each command lives in migrate/commands/."""

from __future__ import annotations

import errno
import signal
import sys

import typer

from migrate import __version__
from migrate.commands import apply as apply_cmd
from migrate.commands import doctor as doctor_cmd
from migrate.commands import ops as ops_cmd
from migrate.commands import precision as precision_cmd
from migrate.commands import rules as rules_cmd
from migrate.commands import run as run_cmd
from migrate.commands import scan as scan_cmd
from migrate.commands import sensitivity as sensitivity_cmd
from migrate.core.errors import UsageError

app = typer.Typer(
    name="migrate",
    help="Move PyTorch projects from CUDA to Ascend NPUs (torch + torch_npu).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help strings are shown literally: "[tool.migrate]" stays
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ascend-migrate {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Move PyTorch projects from CUDA to Ascend NPUs (torch + torch_npu)."""


for module in (scan_cmd, apply_cmd, rules_cmd, ops_cmd, precision_cmd, run_cmd,
               sensitivity_cmd, doctor_cmd):
    module.register(app)


# Optional dependencies, by top-level module, and the extra that installs them.
EXTRAS = {"torch": "torch", "safetensors": "torch", "numpy": "torch", "onnx": "onnx",
          "onnxruntime": "onnx", "onnxscript": "onnx", "onnx_ir": "onnx"}


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


def main() -> None:
    _safe_streams()
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        app()
    except UsageError as exc:
        print(f"migrate: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except ModuleNotFoundError as exc:
        root = (exc.name or "").split(".")[0]
        if root not in EXTRAS:
            raise
        print(f"migrate: error: this command needs {root}: pip install "
              f"'ascend-migrate[{EXTRAS[root]}]'", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("migrate: interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:
        from migrate.commands.output import quiet_stdout

        quiet_stdout()
        sys.exit(1)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EIO, errno.EPIPE, errno.EDQUOT):
            raise
        from migrate.commands.output import quiet_stdout

        quiet_stdout()
        print(f"migrate: error: cannot write output: {exc.strerror}", file=sys.stderr)
        sys.exit(2)
    except SystemExit as exc:
        if exc.code in (130, 143):  # typer turns Ctrl-C into a silent Exit(130)
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
