"""A port keeps `ruff format --check` as clean as it was (migrate/fix/reformat.py)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from .goldens import migrate_cli

pytestmark = pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")

FORMATTED = (
    "import torch\n\n\ndef f(x):\n    y = x.cuda(non_blocking=True).float().mean(dim=0)\n    return y\n"
)
UNFORMATTED = "import torch\ndef g(x):\n    return x.cuda( )\n"


def check(path) -> bool:
    return (
        subprocess.run(
            ["ruff", "format", "--check", str(path)], capture_output=True, cwd=path.parent
        ).returncode
        == 0
    )


def test_a_formatted_file_stays_formatted_and_the_port_is_a_fixpoint(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 60\n")
    (tmp_path / "a.py").write_text(FORMATTED)
    (tmp_path / "b.py").write_text(UNFORMATTED)
    assert check(tmp_path / "a.py") and not check(tmp_path / "b.py")
    r = migrate_cli(["apply", str(tmp_path), "--no-cache"])
    assert r.exit_code == 0, r.output
    a = (tmp_path / "a.py").read_text()
    assert check(tmp_path / "a.py") and max(len(line) for line in a.splitlines()) <= 88
    # the overflowing choice bound once (fix/hoist.py), then the line wrapped at 60
    assert '    device_type = "npu" if is_npu_available() else "cuda"\n' in a
    assert "x.to(device_type, non_blocking=True)" in a
    b = (tmp_path / "b.py").read_text()  # not formatted before: only the port's edits
    assert 'def g(x):\n    return x.to("npu" if is_npu_available() else "cuda" )\n' in b
    again = migrate_cli(["apply", str(tmp_path), "--check", "--no-cache"])
    assert again.exit_code == 0, again.output


def test_a_project_without_ruff_gets_the_edits_as_written(tmp_path):
    # no formatter config: the file's own longest line (103 columns) is the limit
    wide = "    z = torch.stack([x.float().mean(dim=0), x.float().std(dim=0), x.float().amax(0)], dim=0)\n"
    (tmp_path / "a.py").write_text(FORMATTED.replace("    return y\n", wide + "    return y, z\n"))
    assert migrate_cli(["apply", str(tmp_path), "--no-cache"]).exit_code == 0
    assert (
        '    y = x.to("npu" if is_npu_available() else "cuda", non_blocking=True).float().mean(dim=0)\n'
        in (tmp_path / "a.py").read_text()
    )


def test_a_wrapped_with_statement_stays_python_37_syntax(tmp_path):
    """minGPT's trainer.py: a lengthened `with a, b:` was wrapped as `with (a, b):`, which
    Python 3.8 cannot parse; its project declares no Python."""
    import ast

    code = (
        "import torch\n\n\ndef step(model, x, enabled):\n"
        "    with torch.cuda.amp.autocast(enabled=enabled), torch.cuda.device(0):\n"
        "        return model(x)\n"
    )
    (tmp_path / "trainer.py").write_text(code)
    assert migrate_cli(["apply", str(tmp_path), "--no-cache"]).exit_code == 0
    out = (tmp_path / "trainer.py").read_text()
    assert "with (" not in out and "    with torch.amp.autocast(device_type, enabled=enabled)," in out
    ast.parse(out)
