"""Model FLOPs per step, counted: ``MOD:FN``'s model run once forward and backward under
``torch.utils.flop_counter.FlopCounterMode`` (matmuls, convolutions, attention: the ops MFU
counts), on the CPU, with the factory's own loss or the ops capture's default one.

The factory builds one rank's batch, so the count is one rank's FLOPs per step. The
optimizer step is not counted (elementwise, no model FLOPs). What the user's code raises
is a UsageError naming ``--model`` (exit 2).
"""

from __future__ import annotations

from migrate.core.errors import UsageError

__all__ = ["count_flops"]

OPTION = "--model"


def count_flops(spec: str) -> dict[str, float]:
    """``{"forward": F, "backward": B, "total": F + B}`` for the model ``spec`` builds."""
    try:
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError:
        raise UsageError(f"{OPTION} needs torch (pip install 'ascend-migrate[torch]') or --flops N") from None
    from migrate.core.model_spec import load_model_spec
    from migrate.ops.aten import run

    got = load_model_spec(spec, OPTION)
    run.check_runnable(got.model, OPTION)
    with FlopCounterMode(display=False) as counter:
        out = run.forward(got.model, got.args, got.kwargs, OPTION)
    forward = float(counter.get_total_flops())
    with FlopCounterMode(display=False) as counter:
        try:
            value = got.loss(out) if got.loss is not None else run.default_loss(out)
            value.backward()
        except UsageError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's loss or backward failed: bad input
            text = str(exc).strip()
            raise UsageError(
                f"{OPTION} {spec}: the backward pass failed: {type(exc).__name__}"
                + (f": {text.splitlines()[0]}" if text else "")
            ) from None
    backward = float(counter.get_total_flops())
    if forward + backward <= 0:
        raise UsageError(
            f"{OPTION} {spec}: the model ran no op that FLOPs are counted for (matmul, convolution, "
            "attention); give --flops N"
        )
    return {"forward": forward, "backward": backward, "total": forward + backward}
