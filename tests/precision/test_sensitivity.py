"""`migrate sensitivity`: ranking by end-to-end effect, outlier channels, the keep set and
the files a user applies (ATC keep_dtype / mixlist, autocast exclusion, quant skip list)."""

from __future__ import annotations

import importlib.util
import json

import hf_models as H
import onnx
import pytest
import sens_specs as S
import torch

from migrate.cli import app
from migrate.core.errors import UsageError
from migrate.precision.compare import compare_dumps
from migrate.precision.dumper import dump
from migrate.precision.sensitivity import run_sensitivity
from migrate.precision.sensitivity.formats import fake_quant, parse_format
from migrate.precision.thresholds import load_gate

HERE = H.__file__.rsplit("/", 1)[0]


def _cli(*argv):
    from typer.testing import CliRunner

    return CliRunner().invoke(app, list(argv), catch_exceptions=False)


def _run(spec, fmt, **kw):
    made = spec()
    return run_sensitivity(
        made["model"], [(b, {}) for b in made["calibration"]], fmt, gate=load_gate(None), **kw
    )


def test_outlier_channel_ranks_first_per_tensor_and_matters_less_per_channel():
    per_tensor = _run(S.outlier_mlp, parse_format("int8", "tensor"))
    per_channel = _run(S.outlier_mlp, parse_format("int8", "channel"))
    first, second = per_tensor["ranking"][:2]
    assert first["name"] == "layers.3"
    assert first["effect"]["rel_err"] > 3 * second["effect"]["rel_err"]
    ch = next(r for r in per_channel["ranking"] if r["name"] == "layers.3")
    assert ch["effect"]["rel_err"] < first["effect"]["rel_err"] / 4
    assert per_tensor["calibration"]["stable"] and per_tensor["calibration"]["batches"] == 4
    # the layer after it sees a massive activation on channel 5
    top = per_tensor["outliers"][0]
    assert top["module"] == "layers.4" and top["top_channels"][0] == 5 and top["ratio"] > 10


def test_fake_quant_granularities():
    w = torch.randn(8, 256, generator=torch.Generator().manual_seed(0))
    w[0] *= 100
    w[1, :32] *= 30  # one group of row 1 is large: per-group beats per-channel there
    errs = {g: float((fake_quant(w, 4, g, 32)[1:] - w[1:]).norm()) for g in ("tensor", "channel", "group")}
    assert errs["group"] < errs["channel"] < errs["tensor"]
    with pytest.raises(UsageError, match="^--to must be"):  # the flag the user typed
        parse_format("int3")
    with pytest.raises(UsageError):
        parse_format("int8", "row")


def test_cli_keep_files_parse_name_real_nodes_and_autocast_exclusion_passes_the_gate(tmp_path, monkeypatch):
    monkeypatch.chdir(HERE)
    keep = tmp_path / "keep"
    res = _cli(
        "sensitivity", "-m", "sens_specs:overflow_mlp", "--to", "fp16", "--keep-out", str(keep), "-f", "json"
    )
    assert res.exit_code == 0, res.output[-800:]
    report = json.loads(res.stdout[res.stdout.index("{") :])
    assert report["ranking"][0]["name"] in ("l1", "l2")
    assert {"name", "format", "effect", "rank"} <= set(report["ranking"][0])
    assert report["keep"]["modules"] == ["l1", "l2"] and report["keep"]["within_limit"]
    assert report["whole_model"]["nonfinite"] > 0
    nodes = {n.name for n in onnx.load(str(keep / "model.onnx")).graph.node}
    lines = (keep / "keep_dtype.cfg").read_text().split()
    assert lines and all(line in nodes for line in lines)
    mixlist = json.loads((keep / "modify_mixlist.json").read_text())
    assert set(mixlist) == {"black-list"} and set(mixlist["black-list"]) == {"to-add"}
    assert (keep / "quant_skip.txt").read_text().split() == ["l1", "l2"]
    # apply the exclusion: fp16 autocast run within the fp16 gate
    spec = importlib.util.spec_from_file_location("excl", keep / "autocast_exclude.py")
    excl = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(excl)
    made = S.overflow_mlp()
    x = made["args"][0]
    with torch.no_grad(), dump(made["model"], tmp_path / "ref"):
        made["model"](x)
    for exclude, ok in ((False, False), (True, True)):
        model = S.overflow_mlp()["model"]
        if exclude:
            excl.exclude_from_autocast(model)
        with torch.no_grad(), dump(model, tmp_path / f"t{exclude}"):
            with torch.autocast("cpu", dtype=torch.float16):
                model(x)
        assert bool(compare_dumps(tmp_path / "ref", tmp_path / f"t{exclude}")) is ok


def test_op_units_max_units_and_small_calibration_warning(monkeypatch, capsys):
    monkeypatch.chdir(HERE)
    res = _cli(
        "sensitivity", "-m", "prec_models:mlp_spec", "--to", "bf16", "--unit", "op", "--max-units", "1"
    )
    assert res.exit_code == 0, res.output
    assert "too small for a stable ranking" in res.stdout
    assert "units not measured (--max-units)" in res.stdout
    assert "op:" in res.stdout
    assert "[1/1]" in res.stderr and "s left" in res.stderr  # progress and time estimate
    with pytest.raises(UsageError, match="--unit"):
        _cli("sensitivity", "-m", "prec_models:mlp_spec", "--unit", "layer")


def _strict(text: str):
    """json.loads that rejects what JSON does not have (Infinity, -Infinity, NaN)."""

    def bad(name: str):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=bad)


def test_json_report_of_an_overflow_is_strict_json_with_null_for_non_finite(monkeypatch):
    """fp16 overflow makes the whole-model effect non-finite (rel_err inf, loss nan): the
    JSON report holds null there, never Infinity/NaN, and says how many values overflowed."""
    monkeypatch.chdir(HERE)
    res = _cli("sensitivity", "-m", "sens_specs:overflow_mlp", "--to", "fp16", "-f", "json")
    assert res.exit_code == 0, res.output[-800:]
    report = _strict(res.stdout[res.stdout.index("{") :])
    whole = report["whole_model"]
    assert whole["nonfinite"] > 0 and whole["rel_err"] is None
    broken = [r for r in report["ranking"] if r["effect"]["nonfinite"]]
    assert broken and all(r["effect"]["rel_err"] is None for r in broken)
    assert [r["rank"] for r in report["ranking"]] == list(range(1, len(report["ranking"]) + 1))
    assert report["ranking"][0]["effect"]["nonfinite"]  # still ranked most sensitive


def test_the_ranking_says_why_each_unit_ranks_there():
    """int8 per tensor, weights and activations: layers.3 (one weight row 60x) has the most
    outlying weights, layers.4 (fed by that row's channel) the most outlying inputs; each
    row's error share is its error energy against the whole model's lowered."""
    from migrate.precision.sensitivity.report import render_text

    report = _run(S.outlier_mlp, parse_format("int8", "tensor", activations=True))
    rows = {row["name"]: row for row in report["ranking"]}
    why = {name: row["why"] for name, row in rows.items()}
    assert max(why, key=lambda n: why[n]["weight_outlier"]) == "layers.3"
    assert max(why, key=lambda n: why[n]["input_outlier"]) == "layers.4"
    made = S.outlier_mlp()
    w = made["model"].layers[3].weight.detach()
    assert why["layers.3"]["weight_outlier"] == pytest.approx(float(w.abs().max() / w.pow(2).mean().sqrt()))
    x = torch.cat([b[0].reshape(-1) for b in made["calibration"]])
    assert why["layers.0"]["input_outlier"] == pytest.approx(float(x.abs().max() / x.pow(2).mean().sqrt()))
    whole = report["whole_model"]["rel_err"]
    for row in report["ranking"]:
        assert row["why"]["error_share"] == pytest.approx((row["effect"]["rel_err"] / whole) ** 2)
    top = report["ranking"][0]
    line = next(li for li in render_text(report).splitlines() if f" {top['name']}  " in li)
    assert f"why: share {top['why']['error_share']:.0%}" in line and "input max/rms" in line
