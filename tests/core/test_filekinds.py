"""The file-kind table: every file the scan reads has one kind, found by its name (or a
shell shebang); engines, readers, apply and annotate read their columns from it."""

from __future__ import annotations

from pathlib import PurePath

import pytest

from migrate.core.filekinds import FILE_KINDS, TEXT_KINDS, detect, engine_of
from migrate.fix.annotate import COMMENT_KINDS
from migrate.scan.readers import READERS


@pytest.mark.parametrize(
    "path, kind",
    [
        ("scripts/train.sh", "shell"),
        ("run.bash", "shell"),
        ("x.zsh", "shell"),
        ("jobs/pretrain.slurm", "shell"),
        ("job.sbatch", "shell"),
        (".envrc", "shell"),
        ("Dockerfile", "docker"),
        ("docker/Dockerfile.gpu", "docker"),
        ("train.dockerfile", "docker"),
        ("Containerfile", "docker"),
        ("Makefile", "make"),
        ("GNUmakefile", "make"),
        ("build/rules.mk", "make"),
        ("ci.yml", "yaml"),
        ("k8s/job.yaml", "yaml"),
        ("environment.yml", "conda"),
        ("requirements.txt", "requirements"),
        ("requirements-dev.txt", "requirements"),
        ("requirements/base.txt", "requirements"),
        ("requirements/base.in", "requirements"),
        ("constraints.txt", "requirements"),
        ("pyproject.toml", "pyproject"),
        ("setup.cfg", "setup-cfg"),
        ("k.cu", "cuda"),
        ("k.cuh", "cuda"),
        (".env", "env"),
        ("prod.env", "env"),
        ("train.py", "python"),
        ("model.onnx", "onnx"),
        ("nb.ipynb", "notebook"),
        ("dockerfile.py", "python"),
        ("README.md", None),
        ("Makefile.in", None),
        ("MANIFEST.in", None),
        ("notes.txt", None),
    ],
)
def test_file_kind_by_name(path, kind):
    assert detect(PurePath(path)) == kind


def test_file_kind_reads_shebang_of_files_without_suffix(tmp_path):
    (tmp_path / "launch").write_text("#!/usr/bin/env bash\nexport CUDA_VISIBLE_DEVICES=0\n")
    (tmp_path / "tool").write_text("#!/usr/bin/env python3\nprint(1)\n")
    (tmp_path / "blob").write_bytes(b"\x00\x01\x02")
    assert detect(tmp_path / "launch") == "shell"
    assert detect(tmp_path / "tool") is None
    assert detect(tmp_path / "blob") is None
    assert detect(tmp_path / "missing") is None


def test_every_kind_has_a_reader_and_an_engine():
    assert {k.reader for k in FILE_KINDS.values()} <= set(READERS)
    assert {k.engine for k in FILE_KINDS.values()} == {"python", "text", "onnx"}
    assert engine_of("notebook") == "python" and engine_of("docker") == "text"
    assert set(TEXT_KINDS) == {k for k, row in FILE_KINDS.items() if row.engine == "text"}


def test_apply_and_annotate_read_the_table():
    assert {k for k, row in FILE_KINDS.items() if not row.rewritable} == {"notebook", "onnx"}
    assert COMMENT_KINDS == {
        "python": "#",
        "shell": "#",
        "docker": "#",
        "env": "#",
        "requirements": "#",
        "cuda": "//",
    }
