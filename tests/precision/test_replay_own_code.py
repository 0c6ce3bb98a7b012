"""Replay finds errors made by a module's own code between its children (functional calls,
fused ops, in-place math), and with --apis the torch call that made them."""

from __future__ import annotations

import hf_models as H
import pytest
import torch
from torch import nn

from migrate.precision.compare import compare_dumps
from migrate.precision.dumper import dump
from migrate.precision.replay import replay_model

pytest.importorskip("transformers")


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


class NormBlock(nn.Module):
    """A hand-written RMSNorm called as a function between two child Linear layers."""

    def __init__(self, dim: int = 32, eps: float = 1e-6) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)
        self.weight = nn.Parameter(torch.ones(2 * dim))
        self.eps = eps

    def forward(self, x):
        return x + self.down(rms_norm(self.up(x), self.weight, self.eps))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(NormBlock(), NormBlock(), NormBlock())

    def forward(self, x):
        return self.blocks(x)


def _net(eps_fault: float | None = None):
    torch.manual_seed(0)
    net = Net().eval()
    if eps_fault is not None:
        net.blocks[1].eps = eps_fault
    return net, torch.randn(4, 8, 32, generator=torch.Generator().manual_seed(1)) * 0.05


def test_eps_fault_in_a_functional_rmsnorm_is_named_with_its_call(tmp_path):
    net, x = _net()
    with torch.no_grad(), dump(net, tmp_path / "r", inputs=True, apis=True):
        net(x)
    faulty, _ = _net(eps_fault=1e-2)
    result = replay_model(faulty, tmp_path / "r", args=(x,))
    assert result.culprit["name"] == "blocks.1", result.culprit
    api = result.culprit["api"]
    assert api["function"] == "add" and api["location"].endswith(
        f"test_replay_own_code.py:{rms_norm.__code__.co_firstlineno + 1}"
    )
    # (the `+ eps`)
    # without API records the culprit is still the block: its own code feeds `down`
    plain = replay_model(faulty, tmp_path / "r", args=(x,), apis=False)
    assert plain.culprit["name"] == "blocks.1"
    assert plain.culprit["own_code"]["before"] == "blocks.1.down#0"
    assert replay_model(_net()[0], tmp_path / "r", args=(x,)).culprit is None
    for dtype in (torch.bfloat16, torch.float16):  # honest low-precision replays
        low, xl = _net()[0].to(dtype), x.to(dtype)
        honest = replay_model(low, tmp_path / "r", args=(xl,), dtype=dtype)
        assert honest and honest.culprit is None, [
            (e["name"], e["reason"]) for e in honest.entries if e["status"] == "fail"
        ]


@pytest.fixture(scope="module")
def gpt2_ref(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpt2") / "ref"
    H.dump_run(out, "gpt2", inputs=True, apis=True)
    return out


def test_attention_scale_fault_between_children_is_named(gpt2_ref, tmp_path):
    """The issue's case: softmax scale inside scaled_dot_product_attention, in the
    attention's own code between c_attn and c_proj."""
    model, args, kwargs = H.build("gpt2")
    model.transformer.h[1].attn.scaling = 1.0
    with torch.no_grad(), dump(model, tmp_path / "t"):
        model(*args, **kwargs)
    compared = compare_dumps(gpt2_ref, tmp_path / "t")
    assert not compared
    result = replay_model(model, gpt2_ref, args=args, kwargs=kwargs)
    assert result.culprit["name"] == "transformer.h.1.attn" and not result
    assert result.culprit["api"]["function"] == "scaled_dot_product_attention"
    assert "sdpa_attention.py:" in result.culprit["api"]["location"]
    plain = replay_model(model, gpt2_ref, args=args, kwargs=kwargs, apis=False)
    assert plain.culprit["own_code"]["before"] == "transformer.h.1.attn.c_proj#0"


def test_honest_gpt2_replays_with_api_checks_pass(gpt2_ref):
    for mode in ("fp32", "bf16", "fp16"):
        model, args, kwargs = H.build("gpt2")
        if mode != "fp32":
            model, args, kwargs = H.cast(
                model, args, kwargs, getattr(torch, {"bf16": "bfloat16", "fp16": "float16"}[mode])
            )
        result = replay_model(model, gpt2_ref, args=args, kwargs=kwargs)
        assert result and result.culprit is None, (
            mode,
            [(e["name"], e["kind"], e["reason"]) for e in result.entries if e["status"] == "fail"][:3],
        )
        assert result.replay_stats["api_checks"] and result.replay_stats["own_code_checks"]


def test_own_code_fault_below_bf16_rounding_is_named_at_the_reference_precision(tmp_path):
    """Llama's attention with its rotary cosine term on q scaled by 1.25 (the sweep's
    own-code fault) moves the attention output by 0.27 %, below one bf16 rounding: the
    replay at bf16 cannot see it. The replay at the reference's precision (the bf16 target
    lifted to float32, children given the reference's outputs) names the attention's own
    code; honest bf16 and fp16 targets pass it, and the target keeps its dtype."""
    import faults as F

    from migrate.precision.runner import cast_model, move

    model, args, kwargs = H.build("llama")
    with torch.no_grad(), dump(model, tmp_path / "r", inputs=True):
        model(*args, **kwargs)

    def target(dtype):
        low, a, k = H.build("llama")
        return cast_model(low, dtype), move(a, "cpu", dtype), move(k, "cpu", dtype)

    for dtype in (torch.bfloat16, torch.float16):
        honest, a, k = target(dtype)
        result = replay_model(honest, tmp_path / "r", args=a, kwargs=k)
        assert result and result.culprit is None, (result.culprit, result.inconclusive)
        exact = result.replay_stats["exact"]
        assert exact["dtype"] == "float32" and exact["checks"] > 20 and exact["not_run"] is None
    site = "model.layers.1.self_attn"
    faulty, a, k = target(torch.bfloat16)
    with F.own_code_fault(faulty, site, nth=0) as fault:
        result = replay_model(faulty, tmp_path / "r", args=a, kwargs=k)
    assert fault.hit
    assert result.culprit["name"] == site, result.culprit
    assert result.culprit["precision"] == "float32"
    assert result.culprit["own_code"]["before"] == f"{site}.o_proj#0"
    assert all(p.dtype == torch.bfloat16 for p in faulty.parameters())


def test_api_records_hold_the_models_calls_only_not_the_dumps_own(tmp_path):
    """The dump's own torch work inside the hooks (stats, Lineage's norms and a LayerNorm's
    cond over the input's rows) is never recorded as a module's API call."""

    class Ln(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up, self.ln = nn.Linear(16, 16), nn.LayerNorm(16)

        def forward(self, x):
            return self.ln(torch.relu(self.up(x)) + x)

    net, x = Ln().eval(), torch.randn(3, 16)
    for inputs in (False, True):
        with torch.no_grad(), dump(net, tmp_path / f"d{inputs}", inputs=inputs, apis=True) as d:
            net(x)
        apis = sorted(r["name"] for r in d.records if r["kind"] == "api.output")
        assert apis == ["<root>/add", "<root>/relu", "ln/layer_norm", "up/linear"], apis
