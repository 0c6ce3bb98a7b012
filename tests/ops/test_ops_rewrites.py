"""Every suggested rewrite of a CPU-fallback op (op_registry/aten/rewrites.yaml) computes the
same as the original on the CPU, uses only ops with NPU kernels, and replaces a real fallback."""

from __future__ import annotations

import pytest

from migrate.ops.registry import load_aten

torch = pytest.importorskip("torch")

REWRITES = load_aten().rewrites


def _input(kind: str, shape: list[int], gen, bounds=None):
    if kind == "int":
        return torch.randint(bounds[0], bounds[1], shape, generator=gen)
    x = torch.randn(*shape, generator=gen, dtype=torch.float64)
    if kind == "log_softmax":
        return x.log_softmax(-1)
    if kind == "wellcond":
        return x + shape[-1] * torch.eye(shape[-1], dtype=torch.float64)
    if kind == "spd":
        return x @ x.mT + shape[-1] * torch.eye(shape[-1], dtype=torch.float64)
    if kind == "positive":
        return x.abs() + 0.5
    assert kind == "randn", kind
    return x


@pytest.mark.parametrize("op", sorted(REWRITES))
def test_rewrite_matches_the_original_numerically(op):
    entry = REWRITES[op]
    gen = torch.Generator().manual_seed(0)
    env = {
        name: _input(*spec, gen) if len(spec) == 2 else _input(*spec[:2], gen, spec[2])
        for name, spec in entry["inputs"].items()
    }
    scope = {"torch": torch, **env}  # one namespace: the lambdas in `to` see the inputs
    want = eval(entry["from"], scope)  # noqa: S307 - our own data table
    got = eval(entry["to"], scope)  # noqa: S307
    torch.testing.assert_close(got, want, atol=entry["atol"], rtol=entry["atol"])


@pytest.mark.parametrize("op", sorted(REWRITES))
def test_rewrite_replaces_a_fallback_with_ops_that_have_npu_kernels(op):
    reg = load_aten()
    assert not reg.has_kernel(op), op
    for used in REWRITES[op]["uses"]:
        assert reg.has_kernel(used), (op, used)
