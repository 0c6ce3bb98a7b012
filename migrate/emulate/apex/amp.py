"""``apex.amp`` for the emulated NPU: NVIDIA apex's documented API
(https://nvidia.github.io/apex/amp.html) with Ascend's extra keywords.

* ``initialize(models, optimizers, opt_level=..., loss_scale=..., ...)``: the opt level's
  properties (opt_levels.yaml) with the user's overrides. A cast model type casts the models
  (keeping batchnorm float32 where the level says so), casts their floating inputs to it and
  their outputs to float32 (or ``cast_model_outputs``), and makes ``state_dict()`` give
  float32 tensors; master weights are master.py's; O1's casts are ``autocast("npu",
  float16)`` turned on for the thread that called ``initialize`` (PyTorch's CUDA autocast
  lists, not apex's own: apex also runs softmax, gelu, sum, var and interpolate in float32),
  off inside ``disable_casts()``, ``optimizer.step`` and the backward of ``scale_loss``.
* ``scale_loss(loss, optimizers)`` yields ``loss.float() * scale``; on exit the gradients are
  unscaled (master.py), a dynamic scaler checks them for inf/NaN, updates its scale and, on
  overflow, makes the next ``optimizer.step()`` a skip (scaler.py).
* Ascend's keywords (``combine_grad``, ``combine_ddp``, ``check_combined_tensors``,
  ``ddp_replica_count``, ``user_cast_preferred``) are accepted: combined gradients are one
  flat buffer on the device, a speed detail with the same numbers. ``scale_window`` sets the
  dynamic scaler's window.
"""

from __future__ import annotations

import contextlib
import functools
from collections import OrderedDict

import torch

from migrate.emulate.apex import casts, levels, master
from migrate.emulate.apex.scaler import LossScaler

ASCEND_KEYWORDS = (
    "combine_grad",
    "combine_ddp",
    "check_combined_tensors",
    "ddp_replica_count",
    "user_cast_preferred",
)


class AmpState:
    """apex's ``amp._amp_state`` (scripts set ``loss_scalers[0]._loss_scale``)."""

    def __init__(self) -> None:
        self.opt_properties: levels.Properties | None = None
        self.loss_scalers: list[LossScaler] = []
        self.verbosity = 1
        self.min_loss_scale: float | None = None
        self.max_loss_scale: float | None = None


_amp_state = AmpState()


def maybe_print(msg: str, rank0: bool = False) -> None:
    dist = torch.distributed
    if _amp_state.verbosity <= 0:
        return
    if rank0 and dist.is_available() and dist.is_initialized() and dist.get_rank() != 0:
        return
    print(msg)


def _listed(obj, kind) -> tuple[list, bool]:
    if obj is None:
        return [], False
    if isinstance(obj, kind):
        return [obj], False
    if isinstance(obj, list):
        return obj, True
    raise TypeError(f"{kind.__name__} or a list of them expected, got {type(obj).__name__}")


def initialize(
    models,
    optimizers=None,
    enabled=True,
    opt_level="O1",
    cast_model_type=None,
    patch_torch_functions=None,
    keep_batchnorm_fp32=None,
    master_weights=None,
    loss_scale=None,
    cast_model_outputs=None,
    num_losses=1,
    verbosity=1,
    min_loss_scale=None,
    max_loss_scale=2.0**24,
    scale_window=None,
    **ascend,
):
    """NVIDIA apex's ``amp.initialize`` (see the module); returns the models and optimizers
    as given (one or a list each)."""
    unknown = sorted(set(ascend) - set(ASCEND_KEYWORDS))
    if unknown:
        raise TypeError(f"initialize() got an unexpected keyword argument {unknown[0]!r}")
    _amp_state.verbosity = verbosity
    if not enabled:
        return models if optimizers is None else (models, optimizers)
    props = levels.opt_level(opt_level).overridden(
        cast_model_type=cast_model_type,
        patch_torch_functions=patch_torch_functions,
        keep_batchnorm_fp32=keep_batchnorm_fp32,
        master_weights=master_weights,
        loss_scale=loss_scale,
    )
    _amp_state.opt_properties = props
    _amp_state.min_loss_scale, _amp_state.max_loss_scale = min_loss_scale, max_loss_scale
    maybe_print(f"Selected optimization level {props.opt_level}:  {props.brief}", True)
    model_list, models_listed = _listed(models, torch.nn.Module)
    opt_list, opts_listed = _listed(optimizers, torch.optim.Optimizer)
    for model in model_list:
        _check_model(model)
        if props.cast_model_type is not None:
            keep_bn = bool(props.keep_batchnorm_fp32)
            casts.cast_model(model, props.cast_model_type, keep_bn, cast_model_outputs)
        elif cast_model_outputs is not None:
            casts.cast_outputs(model, cast_model_outputs)
    for opt in opt_list:
        master.process(opt, bool(props.master_weights))
        if props.patch_torch_functions:
            _step_without_casts(opt)
    _amp_state.loss_scalers = [
        LossScaler(props.loss_scale, None, None, scale_window, min_loss_scale, max_loss_scale)
        for _ in range(num_losses)
    ]
    if props.patch_torch_functions:
        casts.enable()
    else:
        casts.end()  # the O1 casts of an earlier initialize
    out_models = model_list if models_listed else (model_list[0] if model_list else models)
    if optimizers is None:
        return out_models
    return out_models, (opt_list if opts_listed else opt_list[0])


def _check_model(model: torch.nn.Module) -> None:
    wrappers = (torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel)
    if isinstance(model, wrappers):
        raise RuntimeError(
            f"Incoming model is an instance of {type(model).__name__}. Parallel wrappers should only "
            "be applied to the model(s) AFTER the model(s) have been returned from amp.initialize."
        )


def _step_without_casts(optimizer) -> None:
    old = optimizer.step

    @functools.wraps(old)
    def step(*args, **kwargs):
        with casts.disabled():
            return old(*args, **kwargs)

    optimizer.step = step


@contextlib.contextmanager
def scale_loss(loss, optimizers, loss_id=0, model=None, delay_unscale=False, delay_overflow_check=False):
    """NVIDIA apex's ``amp.scale_loss`` (see the module)."""
    props = _amp_state.opt_properties
    if props is None:
        raise RuntimeError(
            "Invoked 'with amp.scale_loss`, but internal Amp state has not been initialized.  "
            "model, optimizer = amp.initialize(model, optimizer, opt_level=...) must be called "
            "before `with amp.scale_loss`."
        )
    opts: list = [optimizers] if isinstance(optimizers, torch.optim.Optimizer) else list(optimizers)
    scaler = _amp_state.loss_scalers[loss_id]
    scale = scaler.loss_scale()
    if not props.master_weights and not scaler.dynamic and scale == 1.0:
        with casts.disabled():
            yield loss.float()
        return
    from migrate.emulate.monitor import unmonitored

    for opt in opts:
        if not opt._amp_stash.params_have_scaled_gradients:
            with unmonitored():
                master.prepare_backward(opt)
    with casts.disabled():
        yield loss.float() * scale
    if delay_unscale:
        for opt in opts:
            opt._amp_stash.params_have_scaled_gradients = True
        return
    with unmonitored():
        _unscale(opts, scaler, loss_id, delay_overflow_check)


def _unscale(opts: list, scaler: LossScaler, loss_id: int, delay_overflow_check: bool) -> None:
    scaler.clear_overflow_state()
    for opt in opts:
        master.post_backward(opt, scaler)
        opt._amp_stash.params_have_scaled_gradients = False
    if delay_overflow_check or not scaler.update_scale():
        return
    for opt in opts:

        def say() -> None:
            scale = scaler.loss_scale()
            maybe_print(
                f"Gradient overflow.  Skipping step, loss scaler {loss_id} reducing loss scale to {scale}"
            )

        master.skip_next_step(opt, say)


def master_params(optimizer):
    """The parameters ``optimizer`` steps (with master weights: the float32 masters)."""
    for group in optimizer.param_groups:
        yield from group["params"]


def state_dict(destination=None):
    destination = OrderedDict() if destination is None else destination
    for idx, scaler in enumerate(_amp_state.loss_scalers):
        destination[f"loss_scaler{idx}"] = {"loss_scale": scaler.loss_scale(), "unskipped": scaler._unskipped}
    return destination


def load_state_dict(state_dict) -> None:
    if len(state_dict) != len(_amp_state.loss_scalers):
        print(
            f"Warning: state_dict contains {len(state_dict)} entries, while "
            f"{len(_amp_state.loss_scalers)} loss_scalers are used"
        )
    unexpected = [k for k in state_dict if "loss_scaler" not in k]
    if unexpected:
        raise RuntimeError(
            "Error(s) in loading state_dict. Unexpected key(s) in state_dict: "
            + ", ".join(f'"{k}"' for k in unexpected)
            + ". "
        )
    for scaler, key in zip(_amp_state.loss_scalers, list(state_dict)):
        scaler._loss_scale = state_dict[key]["loss_scale"]
        scaler._unskipped = state_dict[key]["unskipped"]


disable_casts = casts.disabled
half_function = casts.half_function
float_function = casts.float_function
promote_function = casts.promote_function
register_half_function = casts.register_half_function
register_float_function = casts.register_float_function
register_promote_function = casts.register_promote_function

__all__ = [
    "_amp_state",
    "initialize",
    "scale_loss",
    "master_params",
    "state_dict",
    "load_state_dict",
    "disable_casts",
    "half_function",
    "float_function",
    "promote_function",
    "register_half_function",
    "register_float_function",
    "register_promote_function",
]
