"""Notebooks: code cells are scanned; findings point at the notebook's own lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from migrate.cli import app
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


# Malformed notebooks that hold no CUDA token: the token prefilter alone would skip them,
# so the file was reported as clean ("All checks passed") though nothing of it was read.
MALFORMED = [
    ({"cells": {"0": {"cell_type": "code", "source": ["print(1)\n"]}}}, "cells is not a list"),
    ({"cells": "print(1)\n"}, "cells is not a list"),
    ({"cells": None}, "cells is not a list"),
    ({"metadata": {}}, "no cells"),
    ([{"cell_type": "code", "source": "print(1)\n"}], "not a JSON object"),
    ({"cells": [{"cell_type": "code", "source": 7}]}, "cell 1 source is not text"),
    (
        {"cells": [{"cell_type": "markdown"}, {"cell_type": "code", "source": {"a": "x"}}]},
        "cell 2 source is not text",
    ),
    ({"cells": [{"cell_type": "code", "source": ["print(1)\n", None]}]}, "cell 1 source is not text"),
]


@pytest.mark.parametrize(("doc", "why"), MALFORMED)
def test_a_malformed_notebook_is_a_file_error_even_without_cuda_tokens(tmp_path: Path, doc, why):
    (tmp_path / "n.ipynb").write_text(json.dumps(doc))
    (tmp_path / "ok.py").write_text("print(1)\n")
    result = scan_paths([tmp_path], ScanOptions(jobs=1))
    assert [(e.path, e.message) for e in result.errors] == [("n.ipynb", f"not a notebook: {why}")]
    assert result.findings == []


def test_cli_scan_and_apply_report_a_notebook_whose_cells_is_not_a_list(tmp_path: Path):
    """Through the command line, as a user sees it: scan exits 1 naming the file, apply
    names it among its errors and changes nothing."""
    nb = tmp_path / "n.ipynb"
    nb.write_text(json.dumps({"cells": {"0": {"cell_type": "code", "source": ["print(1)\n"]}}}))
    (tmp_path / "m.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    before = nb.read_bytes()
    scan = CliRunner().invoke(app, ["scan", str(nb)])
    assert scan.exit_code == 1, scan.output
    assert "n.ipynb: not a notebook: cells is not a list" in scan.stdout
    assert "All checks passed" not in scan.stdout
    apply = CliRunner().invoke(app, ["apply", str(tmp_path)])
    assert "n.ipynb: error: not a notebook: cells is not a list" in apply.output
    assert nb.read_bytes() == before
