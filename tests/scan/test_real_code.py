"""Exact findings on real code: the installed torch's own sources (CI pins torch 2.13.0).

These files mention CUDA in docstrings, comments, log messages and error strings as well
as in real API uses; only the uses may be reported.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.core.rules import default_rules
from migrate.scan.engine import scan_text

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(
    not torch.__version__.startswith("2.13.0"), reason="line numbers are those of torch 2.13.0"
)
TORCH = Path(torch.__file__).parent

EXPECTED = {
    "amp/grad_scaler.py": [("MIG201", 125), ("MIG201", 134), ("MIG101", 135)],
    "nn/parallel/data_parallel.py": [("MIG201", 166)],
    "nn/modules/module.py": [("MIG202", 1096)],
    "random.py": [("MIG101", 66), ("MIG101", 67), ("MIG101", 96), ("MIG101", 97), ("MIG201", 189)],
    "utils/data/dataloader.py": [],
}


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_torch_sources(rel):
    text = (TORCH / rel).read_text(encoding="utf-8")
    assert "cuda" in text or rel == "utils/data/dataloader.py"
    found = [(f.rule, f.line) for f in scan_text(text, rel, "python", default_rules(), "npu")]
    assert found == EXPECTED[rel]


def test_torch_sources_fix_to_valid_python():
    from functools import partial

    from migrate.fix.rewrite import fix_text
    from migrate.fix.run import engine_scan

    rules = list(default_rules())
    text = (TORCH / "random.py").read_text(encoding="utf-8")
    for target in ("npu", "portable"):
        scan = partial(engine_scan, target=target)
        new, edits, remaining, error = fix_text(text, "random.py", "python", rules, scan, unsafe=False)
        assert error is None and len(edits) >= 5, target
        compile(new, "random.py", "exec")
        assert "import torch.cuda\n" in new
        assert fix_text(new, "random.py", "python", rules, scan, unsafe=False)[1] == [], target
        if target == "npu":
            assert "torch.npu.manual_seed_all(seed)" in new
        else:  # through the NPU check, defined once in the file (not in a package)
            assert "torch.npu if is_npu_available() else torch.cuda" in new
            assert ".manual_seed_all(seed)" in new and "torch.cuda.manual_seed_all(seed)" not in new
            assert new.count("def is_npu_available() -> bool:") == 1
