"""The `migrate` command line: parse, call, render. Each command lives in migrate/commands/."""

from __future__ import annotations

import sys

import typer

from migrate import __version__
from migrate.commands import apply as apply_cmd
from migrate.commands import ops as ops_cmd
from migrate.commands import precision as precision_cmd
from migrate.commands import rules as rules_cmd
from migrate.commands import scan as scan_cmd
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


for module in (scan_cmd, apply_cmd, rules_cmd, ops_cmd, precision_cmd):
    module.register(app)


# Optional dependencies, by top-level module, and the extra that installs them.
EXTRAS = {"torch": "torch", "safetensors": "torch", "numpy": "torch", "onnx": "onnx",
          "onnxruntime": "onnx", "onnxscript": "onnx", "onnx_ir": "onnx"}


def main() -> None:
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
