"""Golden samples: samples/<name> migrated with `migrate apply --unsafe-fixes --annotate
--target T` must equal samples/_expected/<T>/<name>, file by file, byte for byte.

Regenerate after a reviewed rule change:  python -m tests.fix.goldens
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
EXPECTED = SAMPLES / "_expected"
NAMES = (
    "train_amp",
    "ddp_launcher",
    "hf_flash_attention",
    "cuda_extension",
    "multi_backend",
    "own_device_helper",
)
TARGETS = ("portable", "npu", "transfer")
FLAGS = ["--unsafe-fixes", "--annotate", "--no-cache", "--no-progress"]
CASES = [(name, target) for target in TARGETS for name in NAMES]


def migrate_cli(args: list[str]):
    from typer.testing import CliRunner

    from migrate.cli import app

    return CliRunner().invoke(app, args)


def migrate_copy(name: str, dest: Path, target: str) -> Path:
    """Copy samples/<name> to dest/<target>/<name> and apply; return the copy."""
    work = dest / target / name
    shutil.copytree(SAMPLES / name, work, symlinks=True)
    result = migrate_cli(["apply", str(work), *FLAGS, "--target", target])
    if result.exit_code != 0:
        raise RuntimeError(f"apply failed ({result.exit_code}): {result.output}")
    return work


def files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def update() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name, target in CASES:
            work = migrate_copy(name, Path(tmp), target)
            dest = EXPECTED / target / name
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(work, dest, symlinks=True)
            print(f"updated {dest.relative_to(REPO)}", file=sys.stderr)


if __name__ == "__main__":
    update()
