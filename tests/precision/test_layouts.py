"""Dumps laid out differently: per-rank folders, DDP-wrapped targets, fused vs split
modules, and API-level records inside a module's forward."""

from __future__ import annotations

import torch
from test_cli import _main
from torch import nn

from migrate.precision.compare import compare_dumps
from migrate.precision.dumper import dump


def test_parent_folders_compare_rank_by_rank(tmp_path, make_dump):
    for rank in (0, 1):
        make_dump("mlp_spec", tmp_path / "ref" / f"rank{rank}")
        env = {"PREC_PERTURB": "layers.2:0.05"} if rank == 1 else None
        make_dump("mlp_spec", tmp_path / "tgt" / f"rank{rank}", env=env)
    result = compare_dumps(tmp_path / "ref", tmp_path / "tgt")
    assert not result
    assert [(r["rank"], r["passed"]) for r in result.ranks] == [(0, True), (1, False)]
    assert result.first_divergence["rank"] == 1
    assert result.first_divergence["name"] == "layers.2"
    assert _main("compare", tmp_path / "ref", tmp_path / "ref") == 0
    assert _main("compare", tmp_path / "ref", tmp_path / "tgt" / "rank0") == 2


class Wrapper(nn.Module):
    """What DistributedDataParallel looks like to named_modules: everything under module."""

    def __init__(self, model):
        super().__init__()
        self.module = model

    def forward(self, *args):
        return self.module(*args)


def test_ddp_wrapped_target_maps_to_unwrapped_reference(tmp_path, make_dump, build):
    ref = make_dump("mlp_spec", tmp_path / "r")
    model, args, _ = build("mlp_spec")
    wrapped = Wrapper(model)
    with torch.no_grad(), dump(wrapped, tmp_path / "t"):
        wrapped(*args)
    result = compare_dumps(ref, tmp_path / "t")
    assert result and result.counts()["missing"] == 0 and not result.weights
    back = compare_dumps(tmp_path / "t", ref)  # a wrapped reference, too
    assert back and back.counts()["missing"] == 0 and not back.weights


class Fused(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.qkv, self.out = nn.Linear(8, 24), nn.Linear(24, 4)

    def forward(self, x):
        return self.out(self.qkv(x))


class Split(nn.Module):
    def __init__(self, fused, fault=0.0):
        super().__init__()
        self.q, self.k, self.v = (nn.Linear(8, 8) for _ in range(3))
        with torch.no_grad():
            for i, lin in enumerate((self.q, self.k, self.v)):
                lin.weight.copy_(fused.qkv.weight[8 * i : 8 * i + 8])
                lin.bias.copy_(fused.qkv.bias[8 * i : 8 * i + 8])
            self.k.weight[0] *= 1 + fault
        self.out = fused.out

    def forward(self, x):
        return self.out(torch.cat([self.q(x), self.k(x), self.v(x)], dim=-1))


def test_fused_qkv_maps_onto_split_projections(tmp_path):
    fused, x = Fused(), torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(1))
    runs = {"r": fused, "t": Split(fused), "bad": Split(fused, fault=0.2)}
    for name, model in runs.items():
        with torch.no_grad(), dump(model, tmp_path / name):
            model(x)
    mapping = tmp_path / "map.yaml"
    mapping.write_text("fused:\n  - {reference: qkv, target: [q, k, v], dim: -1}\n")
    assert not compare_dumps(tmp_path / "r", tmp_path / "t")  # unmapped: missing tensors
    assert compare_dumps(tmp_path / "r", tmp_path / "t", mapping=mapping)
    bad = compare_dumps(tmp_path / "r", tmp_path / "bad", mapping=mapping)
    assert not bad and bad.first_divergence["name"] == "qkv"


class Block(nn.Module):
    def __init__(self, scale):
        super().__init__()
        torch.manual_seed(0)
        self.lin, self.scale = nn.Linear(16, 16), scale

    def forward(self, x):
        return torch.tanh(self.lin(x)) * self.scale + x.mean()


def test_api_level_dump_locates_a_fault_inside_a_forward(tmp_path):
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(1))
    for name, scale in (("r", 1.0), ("t", 1.001)):
        model = nn.Sequential(Block(scale), nn.Linear(16, 2))
        with torch.no_grad(), dump(model, tmp_path / name, apis=True):
            model(x)
    result = compare_dumps(tmp_path / "r", tmp_path / "t")
    names = [e["name"] for e in result.entries if e["kind"] == "api.output"]
    assert {"0.lin/linear", "0/tanh", "0/mul", "0/mean", "0/add"} <= set(names)
    assert result.first_divergence["name"] == "0/mul"
    tanh = next(e for e in result.entries if e["name"] == "0/tanh")
    assert tanh["status"] == "pass"


def test_replay_of_the_wrong_model_exits_2(tmp_path, make_dump, capsys):
    ref = make_dump("mlp_spec", tmp_path / "r", inputs=True)
    capsys.readouterr()
    assert _main("replay", "--model", "prec_models:wide_spec", "--ref", ref) == 2
    assert "inconclusive" in capsys.readouterr().err
