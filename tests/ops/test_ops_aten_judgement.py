"""Dispatch judgement of the ATen capture, on real models (torch modules and tiny
transformers configs, random init) in eval and train mode, against the torch_npu 2.14.0
registry built from the wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.core.errors import UsageError

torch = pytest.importorskip("torch")
from migrate.ops.aten.census import aten_census  # noqa: E402
from migrate.ops.aten.judge import Judge, serving_composite  # noqa: E402

SPECS = Path(__file__).with_name("specs.py")


def spec(fn: str) -> str:
    return f"{SPECS}:{fn}"


def _bad(report) -> dict:
    return {r["op"]: r["status"] for r in report["ops"] if r["status"] != "supported"}


def _rows(report) -> dict:
    return {r["op"]: r for r in report["ops"]}


@pytest.mark.parametrize("key", ["CompositeExplicitAutogradNonFunctional", "CompositeExplicitAutograd"])
def test_no_op_served_by_a_torch_composite_is_judged_a_fallback_without_descent(key):
    judge = Judge(None)
    wrong = []
    for name in torch._C._dispatch_get_registrations_for_dispatch_key(key):
        if not name.startswith("aten::") or serving_composite(name) is None:
            continue
        verdict = judge.direct(name)
        if verdict is not None and verdict.status == "cpu-fallback":
            wrong.append(name)
    assert wrong == []


def test_ops_served_by_nonfunctional_composites_are_supported():
    report = aten_census(spec("scatters"))
    rows = _rows(report)
    for op in (
        "aten::pixel_shuffle",
        "aten::pixel_unshuffle",
        "aten::slice_scatter",
        "aten::select_scatter",
        "aten::diagonal_scatter",
        "aten::diag_embed",
    ):
        assert rows[op]["status"] == "supported", (op, rows[op]["reason"])
        assert "CompositeExplicitAutogradNonFunctional" in serving_composite(op)
    assert _bad(report) == {} and report["errors"] == []


def test_detach_is_counted_once_per_call_not_per_recursion():
    from torch.utils._python_dispatch import TorchDispatchMode

    calls = []

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            calls.append(func.name())
            return func(*args, **(kwargs or {}))

    from specs import scatters

    model, args = scatters()
    with torch.no_grad(), Count():
        model(*args)
    report = aten_census(spec("scatters"))
    assert _rows(report)["aten::detach"]["count"] == calls.count("aten::detach") == 1


def test_real_fallbacks_stay_fallbacks_with_the_dispatching_line_and_rewrites():
    report = aten_census(spec("fallbacks"))
    bad = _bad(report)
    assert bad == {
        op: "cpu-fallback"
        for op in (
            "aten::lgamma",
            "aten::digamma",
            "aten::i0",
            "aten::_linalg_det",
            "aten::linalg_inv_ex",
            "aten::_linalg_eigh",
            "aten::_linalg_solve_ex",
        )
    }
    rows = _rows(report)
    source = SPECS.read_text().splitlines()
    for op in bad:
        (loc,) = rows[op]["locations"]
        file, line = loc.rsplit(":", 1)
        assert Path(file).resolve() == SPECS.resolve()
        assert "torch." in source[int(line) - 1], (op, loc)
    assert rows["aten::linalg_inv_ex"]["rewrite"]["to"] == "torch.inverse(A)"
    assert "rewrite" not in rows["aten::lgamma"]


def test_host_sync_and_dynamic_shape_warnings_name_module_and_line():
    report = aten_census(spec("host_sync"))
    warned = {w["op"]: w for w in report["warnings"]}
    assert set(warned) == {
        "aten::index.Tensor",
        "aten::nonzero",
        "aten::_unique2",
        "aten::_local_scalar_dense",
    }
    assert all(
        w["nodes"] == ["<root>"] and w["locations"][0].endswith(tuple(f":{n}" for n in range(90, 110)))
        for w in warned.values()
    )
    assert "boolean-mask" in warned["aten::index.Tensor"]["why"]
    assert _bad(report) == {}


@pytest.fixture(scope="module")
def bert_train():
    return aten_census(spec("bert"), train=True)


def test_bert_training_step_is_all_supported_and_backward_is_attributed(bert_train):
    assert bert_train["mode"] == "train" and _bad(bert_train) == {}
    rows = _rows(bert_train)
    # CLS pooling: select in forward, select_backward (a NonFunctional composite) in backward.
    assert rows["aten::select_backward"]["phases"] == ["backward"]
    assert rows["aten::select_backward"]["nodes"] == ["bert.pooler"]
    assert rows["aten::native_layer_norm_backward"]["nodes"] == sorted(
        rows["aten::native_layer_norm"]["nodes"], key=rows["aten::native_layer_norm_backward"]["nodes"].index
    )
    assert rows["aten::gelu_backward"]["nodes"] == ["bert.encoder.layer.0.intermediate.intermediate_act_fn"]
    assert "optimizer" in rows["aten::addcdiv_"]["phases"]
    every = {n for r in bert_train["ops"] for n in r["nodes"]}
    assert "<backward>" not in every
    assert bert_train["warnings"] == [] and bert_train["errors"] == []


@pytest.mark.parametrize("fn", ["vit", "llama", "t5", "whisper", "mixtral"])
def test_transformers_eval_and_train_are_all_supported(fn):
    for train in (False, True):
        report = aten_census(spec(fn), train=train)
        assert _bad(report) == {}, (fn, train)
        assert report["errors"] == []
        # transformers computes the loss inside forward (labels given): no separate loss phase
        assert {p for r in report["ops"] for p in r["phases"]} == (
            {"forward", "backward", "optimizer"} if train else {"forward"}
        )


def test_loss_from_the_factory_and_torch_versions():
    report = aten_census(spec("with_loss"), train=True)
    rows = _rows(report)
    assert "loss" in rows["aten::_log_softmax"]["phases"]
    assert report["torch"] == {
        "used": torch.__version__.split("+")[0],
        "registry_requires": "torch==2.14.0.*",
        "matches": torch.__version__.startswith("2.14.0"),
    }


@pytest.mark.parametrize(
    "fn, says", [("scripted", "TorchScript"), ("exits", "SystemExit"), ("generates", "generator")]
)
def test_models_the_capture_cannot_run_are_clear_usage_errors(fn, says):
    with pytest.raises(UsageError, match=says):
        aten_census(spec(fn))


def test_backward_run_inside_forward_is_attributed_to_the_forward_modules():
    report = aten_census(spec("training_wrapper"))
    rows = _rows(report)
    assert rows["aten::tanh_backward"]["nodes"] == ["net.1"]
    assert rows["aten::tanh_backward"]["phases"] == ["backward"]
    assert set(rows["aten::mm"]["nodes"]) == {"net.0", "net.2"}
    assert _bad(report) == {}
