"""The plain-tensor path of a CompositeImplicitAutograd op (op_registry/aten/notes.yaml,
``regular_tensor_paths``). Some composites take another path for plain tensors than for
tensor subclasses or under a dispatch mode: ``ctc_loss.Tensor`` reads its length tensors on
the host and calls ``_ctc_loss`` with integer lists, unless a subclass or a mode is present,
when it calls ``_ctc_loss.Tensor``. The capture and the emulation are a mode and a subclass,
and the NPU's tensors on the device are neither: both pass those arguments as the lists the
plain-tensor path makes, so that the op they judge is the one the device runs."""

from __future__ import annotations


def plain_tensor_call(reg, fname: str, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    """``(args, kwargs)`` with the arguments the plain-tensor path of ``fname`` reads on the
    host as integer lists (copied to the CPU first, as the kernel copies them), or None when
    there is nothing to convert (not such an op, lists already, non-integral tensors: left
    for the op's own checks)."""
    import torch

    entry = reg.regular_paths.get(fname)
    if not entry:
        return None
    new_args, new_kwargs, changed = list(args), dict(kwargs), False
    for pos, name in entry["host_lists"]:
        holder: list | dict
        if pos < len(new_args):
            holder, key = new_args, pos
        elif name in new_kwargs:
            holder, key = new_kwargs, name
        else:
            continue
        value = holder[key]
        if (
            isinstance(value, torch.Tensor)
            and not value.is_floating_point()
            and not value.is_complex()
            and value.dtype != torch.bool
        ):
            holder[key] = value.to("cpu", torch.long).tolist()
            changed = True
    return (tuple(new_args), new_kwargs) if changed else None
