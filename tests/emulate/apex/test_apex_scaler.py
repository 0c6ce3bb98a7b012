"""apex.amp's LossScaler rules (migrate/emulate/apex/scaler.py) and opt levels (levels.py),
on CPU tensors: no emulation needed for either."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from migrate.emulate.apex import levels  # noqa: E402
from migrate.emulate.apex.scaler import LossScaler  # noqa: E402


def _step(scaler: LossScaler, grad: torch.Tensor) -> tuple[bool, torch.Tensor | None]:
    got: list = [None]
    scaler.clear_overflow_state()
    scaler.unscale([(grad, None, torch.float32, lambda g: got.__setitem__(0, g))])
    return scaler.update_scale(), got[0]


def test_dynamic_scale_halves_on_inf_and_nan_and_grows_after_the_window():
    scaler = LossScaler("dynamic", scale_window=3)
    assert scaler.loss_scale() == 2.0**16
    seen = []
    for grad in ([1.0], [float("inf")], [float("nan")], [1.0], [1.0], [1.0], [1.0]):
        skip, _ = _step(scaler, torch.tensor(grad, dtype=torch.float16))
        seen.append((skip, scaler.loss_scale()))
    assert seen == [
        (False, 2.0**16),
        (True, 2.0**15),
        (True, 2.0**14),
        (False, 2.0**14),
        (False, 2.0**14),
        (False, 2.0**15),  # the third clean step in a row
        (False, 2.0**15),
    ]


def test_bounds_hold_and_the_start_is_capped():
    low = LossScaler("dynamic", min_loss_scale=2.0**15)
    for _ in range(3):
        assert _step(low, torch.tensor([float("inf")]))[0]
    assert low.loss_scale() == 2.0**15
    high = LossScaler("dynamic", init_scale=2.0**20, scale_window=1, max_loss_scale=2.0**18)
    assert high.loss_scale() == 2.0**18
    _step(high, torch.tensor([1.0]))
    assert high.loss_scale() == 2.0**18


def test_unscaling_divides_in_the_target_dtype_and_adds_the_stash():
    scaler = LossScaler(128.0)
    got: list = [None]
    grad = torch.tensor([256.0, 64.0], dtype=torch.float16)
    scaler.unscale([(grad, torch.tensor([1.0, 1.0]), torch.float32, lambda g: got.__setitem__(0, g))])
    assert got[0].dtype == torch.float32 and got[0].tolist() == [3.0, 1.5]


def test_a_static_scale_never_checks_and_never_skips():
    scaler = LossScaler(128.0)
    skip, grad = _step(scaler, torch.tensor([float("inf"), 128.0]))
    assert not skip and scaler.loss_scale() == 128.0
    assert grad is not None and grad.tolist() == [float("inf"), 1.0]  # the inf reaches the optimizer


def test_opt_levels_are_nvidia_apexs_with_overrides():
    o2 = levels.opt_level("O2")
    assert (o2.cast_model_type, o2.keep_batchnorm_fp32, o2.master_weights, o2.loss_scale) == (
        torch.float16,
        True,
        True,
        "dynamic",
    )
    assert levels.opt_level("O0").loss_scale == 1.0 and levels.opt_level("O1").patch_torch_functions
    assert levels.opt_level("O3").keep_batchnorm_fp32 is False
    changed = o2.overridden(loss_scale="128.0", keep_batchnorm_fp32="False", master_weights=None)
    assert (changed.loss_scale, changed.keep_batchnorm_fp32, changed.master_weights) == (128.0, False, True)
    with pytest.raises(RuntimeError, match="Unexpected optimization level O4"):
        levels.opt_level("O4")
