"""A port keeps to the project's line length (migrate/fix/reformat.py)."""

from __future__ import annotations

import shutil

import pytest

from migrate.fix.reformat import configured_line_length, line_limit

from .goldens import migrate_cli


def test_line_length_comes_from_the_projects_config(tmp_path):
    (tmp_path / "pkg").mkdir()
    f = tmp_path / "pkg" / "a.py"
    assert configured_line_length(f) is None
    assert line_limit(f, "x = 1\n") == 79  # lines all within PEP 8: keep to it
    assert line_limit(f, "x = [" + "1, " * 40 + "]\n") == 126  # else the file's own longest line
    assert line_limit(f, "x = 1\n# " + "-" * 150 + "\n") == 79  # a comment does not count
    assert line_limit(f, "x = '" + "a" * 400 + "'\n") == 320  # ruff's longest
    (tmp_path / "setup.cfg").write_text("[isort]\nline_length = 79\n[flake8]\nmax-line-length = 100\n")
    assert configured_line_length(f) == 100
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 119\n")
    assert configured_line_length(f) == 119
    (tmp_path / "pkg" / "ruff.toml").write_text("line-length = 120\n")
    assert configured_line_length(f) == 120
    (tmp_path / "pkg" / "ruff.toml").write_text("line-length = [\n")  # broken: ignored
    assert configured_line_length(f) == 119
    # torchtune: black (88 by default) formats, flake8 allows 120: the formatter decides
    (tmp_path / "pkg" / "ruff.toml").unlink()
    (tmp_path / "pyproject.toml").write_text('[tool.black]\ntarget-version = ["py38"]\n')
    (tmp_path / ".flake8").write_text("[flake8]\nmax-line-length = 120\n")
    assert configured_line_length(f) == 88
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert configured_line_length(f) == 100  # setup.cfg's flake8 section comes first


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_a_long_rewrite_is_wrapped_to_the_configured_length_and_nothing_else_moves(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 79\n")
    long_already = "    return all(type(p) in (torch.Tensor, torch.nn.Parameter) and p.is_cuda for p in ps)"
    code = (
        "import torch\n"
        "def f(params):\n"
        "    # a comment line that is longer than seventy-nine characters, which is fine here\n"
        "    return all(type(p) is torch.Tensor and p.is_cuda for p in params)\n"
        "def g(ps):\n"
        f"{long_already}\n"
        "x = 'a'\n"
    )
    (tmp_path / "a.py").write_text(code)
    assert migrate_cli(["apply", str(tmp_path), "--no-cache"]).exit_code == 0
    out = (tmp_path / "a.py").read_text()
    assert "    return all(\n" in out and "p.device.type in ('cuda', 'npu')\n" in out
    # a line longer than the limit before the port is never rewrapped
    assert long_already.replace("p.is_cuda", "p.device.type in ('cuda', 'npu')") + "\n" in out
    assert out.startswith("import torch\ndef f(params):\n") and out.endswith(")\nx = 'a'\n")


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_a_line_whose_own_comment_overflowed_already_is_not_wrapped(tmp_path):
    # karpathy/nanoGPT train.py: no formatter config, settings with long trailing comments
    examples = "# examples: 'cpu', 'cuda', 'cuda:0', 'cuda:1' etc., or try 'mps' on macbooks"
    wait = "# wait for the kernels of this step before timing it, on every rank of the job"
    code = (
        "import torch\n"
        "backend = 'nccl' # 'nccl', 'gloo', etc.\n"
        f"device = 'cuda' {examples}\n"
        "x = torch.zeros(2).to(device)\n"
        f"torch.cuda.synchronize() {wait}\n"
    )
    (tmp_path / "train.py").write_text(code)
    assert migrate_cli(["apply", str(tmp_path), "--no-cache"]).exit_code == 0
    out = (tmp_path / "train.py").read_text().splitlines()
    assert f"device = 'npu' if is_npu_available() else 'cuda' {examples}" in out
    assert f"(torch.npu if is_npu_available() else torch.cuda).synchronize() {wait}" in out
    assert "backend = 'hccl' if is_npu_available() else 'nccl' # 'nccl', 'gloo', etc." in out
    # a line the port's code makes longer than the file's lines is still wrapped, with its comment
    stats = "torch.cuda.memory_allocated(), torch.cuda.memory_reserved()"
    (tmp_path / "train.py").write_text(f"import torch\nstats = [{stats}] # bytes\n")
    assert migrate_cli(["apply", str(tmp_path), "--no-cache"]).exit_code == 0
    wrapped = (tmp_path / "train.py").read_text()
    assert "stats = [\n    (torch.npu if is_npu_available() else torch.cuda).memory_allocated(),\n" in wrapped
    assert max(len(x) for x in wrapped.splitlines()) <= 79


def test_a_large_config_is_read_within_the_config_readers_limit(tmp_path):
    """A pyproject.toml over 1 MiB (long comments, big tables) still sets the line length,
    up to the limit the [tool.migrate] reader keeps (MAX_DOC_BYTES); past it, it is ignored
    as that reader refuses it."""
    from migrate.core.inputs import MAX_DOC_BYTES

    f = tmp_path / "a.py"
    head = "[tool.black]\nline-length = 119\n"
    pad = "# " + "x" * 1021 + "\n"  # 1 KiB a line
    (tmp_path / "pyproject.toml").write_text(head + pad * 2048)  # 2 MiB
    assert configured_line_length(f) == 119
    at_limit = head + pad * ((MAX_DOC_BYTES - len(head)) // len(pad))
    at_limit += "#" * (MAX_DOC_BYTES - len(at_limit) - 1) + "\n"
    (tmp_path / "pyproject.toml").write_text(at_limit)
    assert (tmp_path / "pyproject.toml").stat().st_size == MAX_DOC_BYTES
    assert configured_line_length(f) == 119
    (tmp_path / "pyproject.toml").write_text(at_limit + "\n")  # one byte over
    assert configured_line_length(f) is None


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_a_file_alone_with_150_column_lines_is_not_rewrapped(tmp_path):
    """No config: the file's own longest line (150 columns) is the limit, not 88; the lines
    the port lengthens within it stay one line (verl's run to 195 columns), and only a line
    it makes longer than any of the file's is wrapped, at 150."""
    longest = (
        "    batch = {key: value.cuda(non_blocking=True) for key, value in batch.items()"
        " if isinstance(value, torch.Tensor) and key not in skip_keys_this_step}"
    )
    wide = (
        '    x = batch["input_ids"].to(torch.device("cuda", torch.cuda.current_device()),'
        " non_blocking=True).long().view(-1)"
    )
    short = '    out = torch.zeros(4, device=torch.device("cuda")).float().mean(dim=0)'
    grows = "    y = torch.zeros(4).cuda()" + ".float()" * 6 + ".sum()"
    assert len(longest) == 150 and 88 < len(wide) < 150 and len(short) <= 88 and len(grows) <= 88
    code = f"import torch\n\n\ndef step(batch, skip_keys_this_step):\n{longest}\n{wide}\n{short}\n{grows}\n"
    code += "    return batch, x, out, y\n"
    (tmp_path / "a.py").write_text(code)
    assert migrate_cli(["apply", str(tmp_path), "--no-cache"]).exit_code == 0
    out = (tmp_path / "a.py").read_text()
    lines = out.splitlines()
    for start, end in (("    x = batch[", ".view(-1)"), ("    out = torch.zeros(4, device=", ".mean(dim=0)")):
        line = next(x for x in lines if x.startswith(start))  # one line each
        assert line.endswith(end) and len(line) <= 150, line
    grown = next(x for x in lines if x.startswith("    y = torch.zeros(4).to("))
    assert grown.endswith(".sum()") and 88 < len(grown) <= 150, grown  # past 88, one line
    assert lines[lines.index("    batch = {") + 1].startswith("        key: value.to(")  # past 150: wrapped
    assert max(len(x) for x in lines) <= 150


def test_a_ruff_table_without_a_length_yields_to_the_files_own_lines(tmp_path):
    # ComfyUI: [tool.ruff] holds lint settings only, main.py runs to 204 columns and is not
    # ruff-formatted: the port's lines are not rewrapped at ruff's default 88
    f = tmp_path / "main.py"
    (tmp_path / "pyproject.toml").write_text('[tool.ruff]\nlint.select = ["S307"]\n')
    long_line = "x = [" + "1, " * 40 + "]\n"
    assert line_limit(f, long_line) == 126
    assert line_limit(f, "x = 1\n") == 88  # within the default: it holds
    (tmp_path / "pyproject.toml").write_text('[tool.black]\ntarget-version = ["py38"]\n')
    assert line_limit(f, long_line) == 88  # black formats at 88 unless set


def test_a_long_docstring_does_not_widen_the_files_limit(tmp_path):
    """opacus: code formatted at 88 beside a 100-column docstring and 126-column f-string
    messages on their own lines. A formatter never wraps those, so their length is not the
    width the code keeps to: the decorator the port lengthens is wrapped at 88."""
    doc = "        " + '"""' + "x" * 86 + '"""'
    code = (
        "import unittest\n\nimport torch\n\n\nclass T(unittest.TestCase):\n"
        '    @unittest.skipIf(not torch.cuda.is_available(), "CUDA not available, skipping test")\n'
        f"    def test_a(self):\n{doc}\n        self.assertTrue(True)\n"
        f'        print(\n            f"{"m" * 110} {{self}}"\n        )\n'  # a message on its own line
    )
    message = next(x for x in code.splitlines() if "mmm" in x)
    assert len(doc) == 100 and max(len(x) for x in code.splitlines() if x not in (doc, message)) <= 88
    (tmp_path / "t.py").write_text(code)
    assert migrate_cli(["apply", str(tmp_path), "--no-cache"]).exit_code == 0
    out = (tmp_path / "t.py").read_text()
    assert max(len(x) for x in out.splitlines() if x not in (doc, message)) <= 88, out
