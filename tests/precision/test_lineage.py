"""The dataflow a dump records between its records (src, kids, scope, cond, xnorm), how a
manifest's copy of it is checked, and the gate keys that steer the judging of gradients
and carried errors (grad_floor, carry_gain)."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from migrate.core.errors import UsageError
from migrate.precision.compare import compare_dumps
from migrate.precision.dumper import dump
from migrate.precision.manifest import Dump
from migrate.precision.thresholds import load_gate


class Residual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc, self.norm = nn.Linear(16, 16), nn.BatchNorm1d(16)

    def forward(self, x):
        return self.norm(x + self.fc(x))  # the norm's input is made by this module's code


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.block = Residual()
        self.squeeze = nn.Linear(16, 2)

    def forward(self, x):
        return self.squeeze(self.block(self.inp(x)))


def _records(tmp_path, model=None, x=None):
    model = model or Net().train()
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(0)) if x is None else x
    with dump(model, tmp_path / "d"):
        model(x)
    return {r["name"]: (i, r) for i, r in enumerate(Dump(tmp_path / "d").records)}


def test_a_dump_records_where_each_call_took_its_inputs_from(tmp_path):
    recs = _records(tmp_path)
    inp, block, fc, norm = (recs[n] for n in ("inp", "block", "block.fc", "block.norm"))
    assert inp[1]["src"] == [] and fc[1]["src"] == [inp[0]]  # the model's input: no source
    assert norm[1]["src"] == [] and set(norm[1]["scope"]) == {inp[0], fc[0]}
    assert block[1]["src"] == [inp[0]] and block[1]["kids"] == [fc[0], norm[0]]
    assert recs["squeeze"][1]["src"] == [block[0]]
    assert norm[1]["cond"] >= 1.0 and "cond" in fc[1] and fc[1]["xnorm"] > 0


def test_a_cancelling_linear_layer_has_a_large_cond(tmp_path):
    layer = nn.Linear(64, 1, bias=False)
    with torch.no_grad():
        layer.weight.fill_(1.0)
        layer.weight[0, 32:] = -1.0
    x = torch.ones(2, 64) + 1e-3 * torch.randn(2, 64, generator=torch.Generator().manual_seed(0))
    cond = _records(tmp_path, layer, x)["<root>"][1]["cond"]
    assert cond > 100  # the output is ~1e-3 of what its terms are


def test_an_average_pool_of_values_that_cancel_has_the_bound_of_a_shared_error(tmp_path):
    """EfficientNet's squeeze-excite squeeze: the spatial mean of a channel whose values
    nearly cancel. An error the window shares (a rounded BatchNorm statistic shifts the whole
    channel) passes the mean whole, so the output's relative error may grow by up to
    rms(x) / rms(y): an honest bf16 step grew it 5.4x there and failed at the reduce."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 8, 8, generator=g)
    x = x - x.mean(dim=(2, 3), keepdim=True) + 0.01  # each window's mean is 0.01
    cond = _records(tmp_path, nn.AdaptiveAvgPool2d(1), x)["<root>"][1]["cond"]
    assert cond == pytest.approx(float(x.square().mean().sqrt() / 0.01), rel=1e-3)
    shared = 0.001 * torch.ones_like(x)  # the worst case the bound allows: the error shared
    rel_in = float(shared.norm() / x.norm())
    rel_out = float(shared.mean(dim=(2, 3)).norm() / x.mean(dim=(2, 3)).norm())
    assert rel_out == pytest.approx(rel_in * cond, rel=1e-3)
    plain = _records(tmp_path / "p", nn.AdaptiveAvgPool2d(1), torch.rand(2, 3, 8, 8, generator=g) + 1)
    assert plain["<root>"][1]["cond"] < 1.2  # positive values: no cancellation


@pytest.mark.parametrize(
    "field, value",
    [
        ("src", [10**6]),
        ("src", "0"),
        ("kids", [True]),
        ("scope", [-2]),
        ("cond", -1.0),
        ("cond", "x"),
        ("xnorm", float("inf")),
        ("src", list(range(300))),
    ],
)
def test_lineage_fields_of_a_manifest_are_checked(tmp_path, field, value):
    _records(tmp_path)
    path = tmp_path / "d" / "manifest.json"
    doc = json.loads(path.read_text())
    doc["records"][-1][field] = value
    path.write_text(json.dumps(doc))
    with pytest.raises(UsageError, match=f"records\\[{len(doc['records']) - 1}\\].{field}"):
        Dump(tmp_path / "d")


def _gate(tmp_path, text):
    path = tmp_path / "gate.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text",
    [
        "grad_floor: .nan",
        "grad_floor: .inf",
        "grad_floor: -0.1",
        "grad_floor: 2",
        "grad_floor: true",
        "grad_floor: x",
        "dtypes: {bfloat16: {grad_floor: .nan}}",
        "overrides: [{match: '*', grad_floor: 1.5}]",
        "carry_gain: .nan",
        "carry_gain: .inf",
        "carry_gain: 0.5",
        "carry_gain: -1",
        "carry_gain: true",
        "carry_gain: [2]",
    ],
)
def test_gate_shares_and_gains_are_checked(tmp_path, text):
    with pytest.raises(UsageError, match="grad_floor|carry_gain"):
        load_gate(_gate(tmp_path, text + "\n"))


def test_gate_keys_take_effect(tmp_path):
    gate = load_gate(_gate(tmp_path, "grad_floor: 0.25\ncarry_gain: 0\n"))
    assert gate.grad_floor == 0.25 and gate.carry_gain == 0.0
    assert gate.grad_floor_of(gate.for_entry("x", "float32", "float32")) == 0.25
    default = load_gate()
    assert default.grad_floor is None and default.carry_gain == 2.0
    bf16 = default.for_entry("x", "bfloat16", "bfloat16", kind="backward.grad_input")
    assert default.grad_floor_of(bf16) == 0.1 and "floor" not in bf16


def test_carry_gain_zero_judges_every_entry_alone(tmp_path):
    """A deep error chain that the default gate carries fails with carrying off."""
    torch.manual_seed(0)
    model = nn.Sequential(
        *[nn.Sequential(nn.Linear(32, 32), nn.BatchNorm1d(32), nn.ReLU()) for _ in range(12)]
    ).train()
    x = torch.randn(2, 32, generator=torch.Generator().manual_seed(1))
    with dump(model, tmp_path / "r"):
        model(x)
    low = model.to(torch.bfloat16)
    with dump(low, tmp_path / "b"):
        low(x.to(torch.bfloat16))
    carried = compare_dumps(tmp_path / "r", tmp_path / "b")
    alone = compare_dumps(tmp_path / "r", tmp_path / "b", _gate(tmp_path, "carry_gain: 0\n"))
    assert carried and not alone
    assert sum("carried" in e["reason"] for e in carried.entries) >= 1


def test_cond_and_xnorm_from_staged_copies_equal_the_hooks(tmp_path, monkeypatch):
    """Lineage's norms and a normalisation's cond, computed by the writer's thread from the
    staged copies, are the values the hook computes from the live tensors (bit for bit)."""
    from migrate.precision import dumper

    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.GroupNorm(2, 8), nn.InstanceNorm2d(8), nn.Flatten(1)
    )
    tail = nn.Sequential(nn.Linear(8 * 36, 32), nn.LayerNorm(32), nn.Linear(32, 4))
    model = nn.Sequential(net, tail).train()
    x = torch.randn(2, 3, 8, 8)

    def run(name):
        with torch.no_grad(), dump(model, tmp_path / name, inputs=True) as d:
            model(x)
        return [{k: r.get(k) for k in ("name", "cond", "xnorm", "stats")} for r in d.records]

    staged = run("staged")
    monkeypatch.setattr(dumper.dump, "_later", lambda self, t, fn: None)  # all in the hook
    assert run("hook") == staged
    assert sum("cond" in r and r["cond"] is not None for r in staged) >= 5


def test_each_module_call_judges_once_whether_it_is_a_linear_layer(tmp_path, monkeypatch):
    from migrate.precision import lineage

    seen: list[str] = []
    real = lineage._is_linear
    monkeypatch.setattr(lineage, "_is_linear", lambda m: seen.append(type(m).__name__) or real(m))
    recs = _records(tmp_path)
    # one judgement per call of a module with a floating input: Net, inp, block, fc, norm, squeeze
    assert sorted(seen) == sorted(["Net", "Linear", "Residual", "Linear", "BatchNorm1d", "Linear"])
    assert "cond" in recs["block.fc"][1] and "cond" in recs["squeeze"][1]  # still judged linear
