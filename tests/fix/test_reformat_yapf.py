"""A port in a project that formats with yapf wraps its long lines as yapf does, in the
project's style (migrate/fix/yapf_style.py): ms-swift's grpo_trainer.py, reduced."""

from __future__ import annotations

import pytest

from .goldens import migrate_cli

yapf_api = pytest.importorskip("yapf.yapflib.yapf_api")

CODE = (
    "import torch\n\n\n"
    "def check(vllm_device, get_device_count):\n"
    "    if vllm_device.split(':')[0] == 'cuda' and int(vllm_device.split(':')[1]) >= get_device_count():\n"
    "        raise ValueError(vllm_device)\n"
)
STYLE = "[yapf]\nBASED_ON_STYLE = pep8\nCOLUMN_LIMIT = 100\n"


@pytest.mark.parametrize("where", ["setup.cfg", ".style.yapf", "pyproject.toml"])
def test_a_yapf_project_gets_yapfs_wrap_of_the_lengthened_line(tmp_path, where):
    style = {
        "setup.cfg": STYLE,
        ".style.yapf": STYLE.replace("[yapf]", "[style]"),
        "pyproject.toml": '[tool.yapf]\nbased_on_style = "pep8"\ncolumn_limit = 100\n',
    }[where]
    (tmp_path / where).write_text(style)
    (tmp_path / "pkg").mkdir()
    path = tmp_path / "pkg" / "trainer.py"
    path.write_text(CODE)
    assert migrate_cli(["apply", str(tmp_path), "--no-cache"]).exit_code == 0
    out = path.read_text()
    assert "in ('cuda', 'npu')" in out and max(len(line) for line in out.splitlines()) <= 100
    # what yapf itself makes of the ported file: nothing left to change
    assert yapf_api.FormatCode(out, style_config=str(tmp_path / where))[0] == out
    assert "if (\n" not in out  # not ruff's wrap
    assert migrate_cli(["apply", str(tmp_path), "--check", "--no-cache"]).exit_code == 0


def test_only_the_lengthened_line_is_given_to_yapf(tmp_path):
    (tmp_path / "setup.cfg").write_text(STYLE)
    loose = "x = [1,2,\n     3]\n"  # not yapf's style, and not the port's to change
    (tmp_path / "t.py").write_text(CODE + loose)
    assert migrate_cli(["apply", str(tmp_path), "--no-cache"]).exit_code == 0
    assert (tmp_path / "t.py").read_text().endswith(loose)
