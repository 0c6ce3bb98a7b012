"""What ``amp.initialize`` does to an optimizer (NVIDIA apex/amp/_process_optimizer.py).

With master weights (O2): every float16 parameter of the optimizer is replaced in its param
groups by a float32 copy (the master weight); float32 parameters (batchnorm's) stay. Before
the backward of ``scale_loss`` the float16 gradients are dropped; after it each is copied to
float32, unscaled and added to its master's gradient. ``step`` updates the masters, copies
them into the float16 model weights and drops the master gradients; ``zero_grad`` zeroes the
model's gradients and drops the masters'.

Without master weights (O0, O1, O3): the parameters are the optimizer's own; the gradients
there before the backward are set aside and added back, unscaled, after it (accumulation
across several ``scale_loss`` blocks gives the sum of the unscaled gradients).
"""

from __future__ import annotations

import types

import torch

from migrate.emulate.apex.scaler import LossScaler

_KINDS = (torch.float16, torch.float32)


class Stash:
    """apex's ``optimizer._amp_stash``: the parameter lists the hooks below work on."""

    def __init__(self, master_weights: bool):
        self.master_weights = master_weights
        self.all_fp16_params: list[torch.Tensor] = []  # model weights that have a master
        self.all_fp32_from_fp16_params: list[torch.Tensor] = []  # their masters
        self.all_fp32_params: list[torch.Tensor] = []  # the optimizer's own parameters
        self.grad_stash: list = []
        self.params_have_scaled_gradients = False
        self.already_patched = False


def _adopt(stash: Stash, group: dict) -> None:
    params = group["params"]
    for i, param in enumerate(params):
        if param.dtype not in _KINDS:
            kind = param.type()
            raise TypeError(f"Optimizer's parameters must be float32 or float16 tensors. Received {kind}")
        if stash.master_weights and param.requires_grad and param.dtype == torch.float16:
            master = param.detach().clone().float()
            master.requires_grad = True
            params[i] = master
            stash.all_fp16_params.append(param)
            stash.all_fp32_from_fp16_params.append(master)
        else:
            stash.all_fp32_params.append(param)


def process(optimizer: torch.optim.Optimizer, master_weights: bool) -> torch.optim.Optimizer:
    if hasattr(optimizer, "_amp_stash"):
        raise RuntimeError("A given optimizer should only be passed through amp.initialize once.")
    stash = Stash(master_weights)
    optimizer._amp_stash = stash
    moved = {}
    for group in optimizer.param_groups:
        before = list(group["params"])
        _adopt(stash, group)
        moved.update({id(a): b for a, b in zip(before, group["params"]) if a is not b})
    for old in [p for p in optimizer.state if id(p) in moved]:
        optimizer.state[moved[id(old)]] = optimizer.state.pop(old)
    optimizer.load_state_dict(optimizer.state_dict())  # recasts per-parameter state to float32
    _patch_add_param_group(optimizer, stash)
    if master_weights:
        _patch_step_and_zero_grad(optimizer, stash)
    return optimizer


def _patch_add_param_group(optimizer, stash: Stash) -> None:
    old = optimizer.add_param_group

    def add_param_group(self, group: dict) -> None:
        group = dict(group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, torch.Tensor) else list(params)
        _adopt(stash, group)
        old(group)

    optimizer.add_param_group = types.MethodType(add_param_group, optimizer)


def _patch_step_and_zero_grad(optimizer, stash: Stash) -> None:
    old_step = optimizer.step

    def step(self, closure=None):
        if closure is not None:
            raise RuntimeError("Currently, Amp does not support closure use with optimizers.")
        result = old_step()
        with torch.no_grad():
            for model, master in zip(stash.all_fp16_params, stash.all_fp32_from_fp16_params):
                model.copy_(master)
        for master in stash.all_fp32_from_fp16_params:
            master.grad = None
        return result

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in stash.all_fp16_params + stash.all_fp32_params:
            if param.grad is not None:
                param.grad.detach_()
                param.grad.zero_()
        for master in stash.all_fp32_from_fp16_params:
            master.grad = None

    optimizer.step = types.MethodType(step, optimizer)
    optimizer.zero_grad = types.MethodType(zero_grad, optimizer)


def prepare_backward(optimizer) -> None:
    """Before the scaled backward: set the gradients already there aside (master weights:
    the float16 ones are dropped, their masters keep what was accumulated)."""
    stash: Stash = optimizer._amp_stash
    for param in stash.all_fp16_params:
        param.grad = None
    stash.grad_stash = [p.grad for p in stash.all_fp32_params]
    for param in stash.all_fp32_params:
        param.grad = None


def post_backward(optimizer, scaler: LossScaler) -> None:
    """After it: unscale the new gradients into the optimizer's parameters (see the module)."""
    stash: Stash = optimizer._amp_stash
    items: list[tuple] = []
    for model, master in zip(stash.all_fp16_params, stash.all_fp32_from_fp16_params):
        if model.grad is not None:
            items.append((model.grad, master.grad, torch.float32, _setter(master)))
    for param, stashed in zip(stash.all_fp32_params, stash.grad_stash):
        if param.grad is not None or stashed is not None:
            items.append((param.grad, stashed, param.dtype, _setter(param)))
    scaler.unscale(items)
    stash.grad_stash = []


def _setter(param: torch.Tensor):
    def put(grad) -> None:
        param.grad = grad

    return put


def skip_next_step(optimizer, say) -> None:
    """apex's patch after an overflow: the next ``step`` does nothing but drop the master
    gradients, says so, and puts the real step back."""
    stash: Stash = optimizer._amp_stash
    if stash.already_patched:
        return
    real = optimizer.step

    def skip_step(closure=None):
        if closure is not None:
            raise RuntimeError("Currently, Amp does not support closure use with optimizers.")
        say()
        for master in stash.all_fp32_from_fp16_params:
            master.grad = None
        optimizer.step = real
        stash.already_patched = False

    optimizer.step = skip_step
    stash.already_patched = True
