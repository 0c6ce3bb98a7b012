"""Where an op came from: the module path (forward hooks, autograd node tags for backward)
and the ``file:line`` of the user code that dispatched it (migrate.core.callsite)."""

from __future__ import annotations

from typing import Any

TAG = "migrate_origin"  # key in an autograd Node's metadata: (module path, file:line | None)


def current_backward_origin() -> tuple[str, str | None] | None:
    """(module path, file:line) of the forward op whose backward is running, if tagged."""
    import torch

    node = torch._C._current_autograd_node()
    if node is None:
        return None
    metadata: Any = node.metadata  # a dict on autograd nodes (the stubs say otherwise)
    return metadata.get(TAG, ("<backward>", None))


def _grad_fns(outputs):
    import torch

    for t in outputs:
        if isinstance(t, torch.Tensor):
            if t.grad_fn is not None:
                yield t.grad_fn
        elif isinstance(t, (list, tuple)):
            yield from _grad_fns(t)


def taggable(func) -> bool:
    """May the outputs of ``func`` be tagged once autograd wrapped them? Not those of an
    op writing into an argument: the output is that argument, and where it is a view
    written in place its ``grad_fn`` is rebuilt on read, under the view's lock, by
    replaying the view op, which dispatches into the mode asking: reading it from there
    deadlocked (kornia's gradcheck). Its node is reached from the next op that uses it."""
    return not func._schema.is_mutable


def tag_outputs(outputs, origin: tuple[str, str | None]) -> None:
    """Tag the autograd nodes of ``outputs`` (already wrapped by autograd) with ``origin``,
    and every untagged node behind them: the nodes a composite op created while its ops were
    not recorded one by one. Tagged nodes (made by earlier ops) stop the walk."""
    todo = [n for n in _grad_fns(outputs) if TAG not in n.metadata]
    while todo:
        node = todo.pop()
        if TAG in node.metadata:
            continue
        node.metadata[TAG] = origin
        todo.extend(n for n, _ in node.next_functions if n is not None and TAG not in n.metadata)


def tag_parameters(model) -> list:
    """Tag each parameter's gradient accumulator with the module that owns it; returns the
    accumulators (keep them alive: autograd holds them weakly)."""
    keep = []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        acc = param.view_as(param).grad_fn.next_functions[0][0]
        if acc is not None:
            acc.metadata[TAG] = (name.rpartition(".")[0] or "<root>", None)
            keep.append(acc)
    return keep


FUSED = "migrate_fused"  # key in an autograd Node's metadata: the fused op that made it


def _boundary(inputs) -> set:
    """Autograd nodes that existed before a call: its inputs' grad_fns."""
    import torch

    found = set()
    for t in inputs:
        if isinstance(t, torch.Tensor) and t.grad_fn is not None:
            found.add(t.grad_fn)
        elif isinstance(t, (list, tuple)):
            found |= _boundary(t)
    return found


def tag_fused(outputs, inputs, op: str) -> None:
    """Mark the autograd nodes a composite op created on the CPU (the graph between its
    outputs and its inputs) as the backward of ``op``: torch_npu runs ``op`` as one kernel
    that owns its backward, so the ops these nodes run are not NPU ops of their own."""
    stop = _boundary(inputs)
    todo = [
        n for n in _grad_fns(outputs if isinstance(outputs, (list, tuple)) else (outputs,)) if n not in stop
    ]
    while todo:
        node = todo.pop()
        if FUSED in node.metadata or type(node).__name__ == "AccumulateGrad":
            continue
        node.metadata[FUSED] = op
        todo.extend(n for n, _ in node.next_functions if n is not None and n not in stop)


def current_fused_backward() -> str | None:
    """The fused op whose backward is running (see :func:`tag_fused`), if any."""
    import torch

    node = torch._C._current_autograd_node()
    metadata: Any = None if node is None else node.metadata  # a dict (the stubs say a method)
    return None if metadata is None else metadata.get(FUSED)
