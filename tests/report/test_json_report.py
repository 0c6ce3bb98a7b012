"""The JSON report, written one finding at a time, is exactly ``json.dumps(indent=2)`` of
the contract's document (docs/contracts.md §3)."""

from __future__ import annotations

import json

from migrate.report.json_report import render_json, to_dict
from migrate.scan.engine import ScanOptions, scan_paths


def test_the_streamed_report_is_the_indented_document(tmp_path):
    (tmp_path / "a.py").write_text('import torch\nx = torch.zeros(1).cuda()\nd = "cuda:0\\u00e9"\n')
    (tmp_path / "b.py").write_text("import torch\ntorch.cuda.synchronize(); y = x.cuda()\n")
    (tmp_path / "bad.py").write_bytes(b"x = '\xff cuda'\n")
    result = scan_paths([tmp_path], ScanOptions(jobs=1))
    assert len(result.findings) >= 3 and result.errors
    text = render_json(result)
    assert text == json.dumps(to_dict(result), indent=2, ensure_ascii=False) + "\n"
    assert json.loads(text)["summary"]["findings"] == len(result.findings)


def test_no_findings_is_an_empty_list(tmp_path):
    result = scan_paths([tmp_path], ScanOptions(jobs=1))
    text = render_json(result)
    assert text == json.dumps(to_dict(result), indent=2, ensure_ascii=False) + "\n"
    assert json.loads(text)["findings"] == []
