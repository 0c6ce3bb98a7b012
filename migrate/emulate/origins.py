"""The forward line of a backward op: a differentiable op on NPU tensors tags the autograd
nodes of its outputs with the user's line (once autograd made them: at the next op), and a
finding made while one of those nodes runs its backward is placed at that line, not at
``<backward>`` (autograd's engine runs backward with no user frame on the stack)."""

from __future__ import annotations

import torch

from migrate.emulate.callsite import where
from migrate.ops.aten.where import current_backward_origin, tag_outputs, taggable

BACKWARD = "<backward>"


def flush(pending: list) -> None:
    """Tag the nodes of the outputs waiting in ``pending`` (autograd has wrapped them)."""
    while pending:
        try:
            outs, site = pending.pop()
        except IndexError:  # another thread emptied it
            return
        tag_outputs(outs if isinstance(outs, (list, tuple)) else (outs,), (BACKWARD, site))


def note_forward(pending: list, func, inputs, out) -> None:
    """Remember ``out`` and the user's line when the op will have a backward."""
    if torch._C._current_graph_task_id() != -1 or not torch.is_grad_enabled() or not taggable(func):
        return
    if any(isinstance(t, torch.Tensor) and t.requires_grad for t in inputs):
        pending.append((out, where(2)))


def backward_site(pending: list) -> str | None:
    """The forward line of the backward running now, if its node was tagged."""
    flush(pending)
    origin = current_backward_origin()
    return origin[1] if origin is not None and origin[1] else None
