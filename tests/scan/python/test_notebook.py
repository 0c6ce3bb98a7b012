"""Notebooks: code cells are scanned; findings point at the notebook's own lines."""

from __future__ import annotations

import json
from pathlib import Path

from migrate.scan.engine import ScanOptions, scan_paths


def test_notebook_cells_are_scanned(tmp_path: Path):
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["Use `x.cuda()` to move data\n"]},
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": 1,
                "source": ["%matplotlib inline\n", "import torch\n", "x = torch.ones(2).cuda()\n"],
            },
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": 2,
                "source": ["!nvidia-smi\n", "y = x.to('cuda:0')\n"],
            },
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": 3,
                "source": ["%%bash\n", "echo cuda\n"],
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "demo.ipynb"
    raw = json.dumps(nb, indent=1)
    path.write_text(raw)
    result = scan_paths([tmp_path], ScanOptions(jobs=1))
    assert result.errors == []
    got = [(f.rule, f.line, f.category) for f in result.findings]
    lines = raw.splitlines()
    assert got == [
        ("MIG202", next(i for i, x in enumerate(lines, 1) if "torch.ones(2).cuda()" in x), "manual"),
        ("MIG201", next(i for i, x in enumerate(lines, 1) if "cuda:0" in x), "manual"),
    ]
    assert "[cell 2, line 3]" in result.findings[0].message


def test_broken_notebook_is_an_error(tmp_path: Path):
    (tmp_path / "bad.ipynb").write_text('{"cells": [ {"cell_type": "code", "source": "x.cuda()"')
    result = scan_paths([tmp_path], ScanOptions(jobs=1))
    assert [e.path for e in result.errors] == ["bad.ipynb"]
