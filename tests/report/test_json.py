"""JSON report: the docs/contracts.md §3 contract."""

from __future__ import annotations

import json

from migrate import __version__
from migrate.report import render

FINDING_KEYS = {
    "rule",
    "name",
    "path",
    "line",
    "column",
    "end_line",
    "end_column",
    "message",
    "category",
    "impact",
    "fix",
    "npu_aware",
    "target",
}


def test_json_contract_keys_and_types(result, rules, project):
    data = json.loads(render(result, "json", rules, root=project))
    assert set(data) == {"tool", "findings", "errors", "summary"}
    assert data["tool"] == {"name": "ascend-migrate", "version": __version__}
    assert len(data["findings"]) == 6
    for f in data["findings"]:
        assert set(f) == FINDING_KEYS
        for key in ("line", "column", "end_line", "end_column"):
            assert isinstance(f[key], int) and f[key] >= 1
        assert f["category"] in ("auto", "assisted", "manual")
        assert f["fix"] is None or (
            set(f["fix"]) == {"applicability", "description", "edits", "imports"}
            and f["fix"]["applicability"] in ("safe", "unsafe")
        )
    assert data["errors"] == [{"path": "src/broken.py", "message": "invalid syntax (line 1, column 7)"}]
    summary = data["summary"]
    effort = summary.pop("effort")
    assert summary == result.summary()
    assert summary["files_scanned"] == 3 and summary["findings"] == 6
    assert summary["by_category"] == {"auto": 4, "assisted": 1, "manual": 1, "perf": 0}
    # docs/contracts.md §3: summary.effort = {"minutes", "packages": [{name, minutes,
    # findings, paths, why}]}; the 4 auto findings in 2 files are one package
    assert effort["minutes"] == 262
    assert {"minutes", "packages"} <= set(effort)
    for pkg in effort["packages"]:
        assert {"name", "minutes", "findings", "paths", "why"} <= set(pkg)
    apply_pkg = next(p for p in effort["packages"] if p["findings"] == 4)
    assert apply_pkg["paths"] == ["src/train.py", "src/util.py"] and apply_pkg["minutes"] == 7
    assert sum(p["minutes"] for p in effort["packages"]) == effort["minutes"]
    assert summary["by_rule"] == {"MIG101": 4, "MIG120": 1, "MIG301": 1}


def test_json_positions_point_at_the_code(result, rules, project):
    """Lines/columns are 1-based and end-exclusive: slicing the file gives the flagged text."""
    data = json.loads(render(result, "json", rules))
    flagged = []
    for f in data["findings"]:
        lines = (project / f["path"]).read_text().splitlines()
        assert f["line"] == f["end_line"]
        flagged.append(lines[f["line"] - 1][f["column"] - 1 : f["end_column"] - 1])
    assert flagged == [
        '"nccl"',
        "torch.cuda.set_device",
        "torch.cuda.synchronize",
        "torch.cuda.synchronize",
        'CUDAExtension("fused_adam", ["fused_adam.cu"])',
        "torch.cuda.synchronize",
    ]
    # Sorted by path, then line.
    keys = [(f["path"], f["line"], f["column"]) for f in data["findings"]]
    assert keys == sorted(keys)
    manual = [f for f in data["findings"] if f["category"] == "manual"]
    assert manual[0]["fix"] is None


def test_statistics_json(result, rules):
    rows = json.loads(render(result, "json", rules, statistics=True))
    assert rows == [
        {"code": "MIG101", "name": "torch-cuda-api", "count": 4, "fix": "safe"},
        {"code": "MIG120", "name": "nccl-backend-string", "count": 1, "fix": "unsafe"},
        {"code": "MIG301", "name": "cuda-extension-build", "count": 1, "fix": ""},
    ]
