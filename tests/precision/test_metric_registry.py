"""A metric is one registration: its field, gate key and report columns follow from it."""

from __future__ import annotations

import json
import sys

import pytest

import migrate.precision.metrics as metrics_pkg
from migrate.core.registry import RegistryError
from migrate.precision import metrics
from migrate.precision.compare import compare_dumps
from migrate.precision.report import RENDERERS

MODULE = """
from migrate.precision.metrics import METRICS


@METRICS.register("p99_abs", limit="max", label="p99 abs", fmt=".4g")
def p99_abs(p):
    import numpy as np

    return float(np.quantile(p.absdiff, 0.99)) if p.absdiff.size else 0.0
"""


@pytest.fixture
def extra_metric(tmp_path):
    (tmp_path / "tmp_p99.py").write_text(MODULE)
    metrics_pkg.__path__.append(str(tmp_path))
    metrics.METRICS.rediscover()
    yield "p99_abs"
    metrics_pkg.__path__.remove(str(tmp_path))
    metrics.METRICS.unregister("p99_abs")
    sys.modules.pop("migrate.precision.metrics.tmp_p99", None)


def test_metric_in_a_new_module_reaches_json_gate_and_reports(extra_metric, tmp_path, make_dump):
    ref = make_dump("mlp_spec", tmp_path / "r")
    tgt = make_dump("mlp_spec", tmp_path / "t", env={"PREC_PERTURB_ONE": "layers.4:0.001"})
    plain = compare_dumps(ref, tgt)
    doc = json.loads(RENDERERS["json"](plain))
    assert all("p99_abs" in e for e in doc["entries"])
    gate = tmp_path / "gate.yaml"
    gate.write_text(
        "dtypes:\n  float32: {p99_abs_max: 0.0, mismatch_max: 1.0, "
        "cosine_min: 0.0, rel_err_max: 1.0}\noverrides:\n"
        "  - {match: 'layers.[0-3]', p99_abs_max: 0.0}\n"
    )
    gated = compare_dumps(ref, tgt, gate=gate)
    assert not gated and gated.first_divergence["reason"].startswith("p99_abs ")
    assert gated.first_divergence["name"] in ("layers.4", "act")
    text, html, md = (RENDERERS[f](gated) for f in ("text", "html", "markdown"))
    assert "p99_abs=" in text and "<th>p99 abs</th>" in html and "| p99 abs |" in md


def test_without_the_module_the_key_is_unknown(tmp_path, make_dump):
    ref = make_dump("mlp_spec", tmp_path / "r", include=["layers.0"])
    gate = tmp_path / "gate.yaml"
    gate.write_text("dtypes:\n  float32: {p99_abs_max: 0.0}\n")
    from migrate.core.errors import UsageError

    with pytest.raises(UsageError, match="p99_abs_max"):
        compare_dumps(ref, ref, gate=gate)


def test_bad_registrations_fail_loudly():
    with pytest.raises(RegistryError, match="registered twice"):
        metrics.METRICS.add("cosine", lambda p: 1.0)
    with pytest.raises(RegistryError, match="limit"):
        metrics.METRICS.add("odd", lambda p: 1.0, limit="above")
    assert "odd" not in metrics.METRICS
