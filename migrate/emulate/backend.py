"""Registers the emulated NPU with PyTorch: PrivateUse1 renamed to ``npu`` through
``torch.utils.backend_registration._setup_privateuseone_for_python_backend`` (backend module
``torch.npu``, accelerator hooks, device guard), and one PrivateUse1 fallback kernel for
every ATen op, which runs it on the CPU (tensor.py).

``install()`` is idempotent; PyTorch allows one rename per process, so once installed the
emulation stays for the life of the process.
"""

from __future__ import annotations

import torch

_STATE: dict = {}


class _Hooks(torch._C._acc.PrivateUse1Hooks):
    def is_available(self) -> bool:
        return True

    def has_primary_context(self, dev_id) -> bool:
        return True

    def is_built(self) -> bool:
        return True


class _Guard(torch._C._acc.DeviceGuard):
    def type_(self):
        return torch._C._autograd.DeviceType.PrivateUse1


def _fallback(op, *args, **kwargs):
    from migrate.emulate.tensor import run

    return run(op, args, kwargs)


def install():
    """Make ``npu`` a device of this process; returns the ``torch.npu`` module."""
    if "module" in _STATE:
        return _STATE["module"]
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

    from migrate.emulate.data import check_torch
    from migrate.emulate.device import build_device_module

    check_torch()
    current = torch._C._get_privateuse1_backend_name()
    if current not in ("privateuseone", "npu"):
        raise RuntimeError(f"cannot emulate npu: PrivateUse1 is already {current!r}")
    module = build_device_module()
    _setup_privateuseone_for_python_backend("npu", module, _Hooks(), _Guard())
    lib = torch.library.Library("_", "IMPL")
    lib.fallback(_fallback, "PrivateUse1")
    from migrate.emulate import accelerator, amp, autocast, legacy_types, rng, serialize, tensor

    amp_lib = autocast.install(lib)
    accelerator.install()
    amp.install()
    rng.install()
    _patch_pinning()
    serialize.install()
    tensor.install_sharing()
    _patch_from_data()
    _patch_module_apply()
    legacy_types.install_type_cast()
    _STATE.update(module=module, lib=lib, amp_lib=amp_lib)
    return module


def _patch_module_apply() -> None:
    """``model.to("npu")`` keeps each Parameter object, as on the device: torch_npu declares
    CPU and NPU tensors shallow-copy compatible, so Module._apply sets ``param.data`` in
    place. An emulated NPU tensor is a wrapper subclass, for which _apply makes a new
    Parameter per module: tied weights (GPT's lm_head and wte) came apart and trained as
    two, and an optimizer built before the move held the CPU ones. Each module's old
    Parameters now take the new ones' contents (torch.utils.swap_tensors) as soon as its
    own _apply is done, before an override such as RNNBase._apply reads them; a Parameter
    that cannot be swapped is replaced once for every module that shares it."""
    apply = torch.nn.Module._apply
    moves: list[dict[int, torch.Tensor]] = []  # per outermost call: id(old) -> what holds it now

    def _apply(self, fn, recurse=True):
        own = [(k, p) for k, p in self._parameters.items() if p is not None]
        outermost = not moves
        if outermost:
            moves.append({})
        try:
            out = apply(self, fn, recurse)
            moved = moves[-1]
            for key, old in own:
                new = self._parameters.get(key)
                if new is None or new is old:
                    continue
                if id(old) not in moved:
                    moved[id(old)] = _swapped(old, new)
                self._parameters[key] = moved[id(old)]
        finally:
            if outermost:
                moves.pop()
        return out

    torch.nn.Module._apply = _apply


def _swapped(old: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """``old`` holding ``new``'s contents, or ``new`` where they cannot be swapped (another
    reference holds ``old``'s tensor, e.g. a graph that saved it)."""
    try:
        torch.utils.swap_tensors(old, new)
    except RuntimeError:
        return new
    return old


def _patch_pinning() -> None:
    """Pinned host memory needs a C++ allocator hook a Python backend cannot give; NPU
    tensors are CPU memory already, so pinning for the emulated device keeps the tensor."""
    pin, is_pinned = torch.Tensor.pin_memory, torch.Tensor.is_pinned

    def pin_memory(self, device=None):
        if device is None or torch.device(device).type == "npu":
            return self
        return pin(self, device)

    def pinned(self, device=None):
        if device is None or torch.device(device).type == "npu":
            return False
        return is_pinned(self, device)

    torch.Tensor.pin_memory, torch.Tensor.is_pinned = pin_memory, pinned


def installed() -> bool:
    return "module" in _STATE


def _same_builtin(original, replacement):
    """``replacement``, known to TorchScript as the builtin op ``original`` stands for: code
    that torch scripts (torch 2.13's torch.distributed.optim at import, user functions) keeps
    compiling ``torch.tensor(...)`` to ``aten::tensor`` instead of compiling the Python
    replacement, which TorchScript cannot (``*args``, ``**kwargs``)."""
    from torch.jit import _builtins

    op = _builtins._find_builtin(original)
    if op is not None:
        _builtins._register_builtin(replacement, op)
    return replacement


def _host_values(data, depth: int = 0):
    """``data`` with the NPU tensors among the numbers of its lists and tuples as their CPU
    values, as torch reads them in ``torch.tensor((cos, cos, 0.0, 0.0))`` (kornia's tests):
    the wrapper, asked for its length there, raised "len() of a 0-d tensor". Each such read
    is a host sync on the NPU."""
    if type(data) not in (list, tuple) or depth >= _NESTING:
        return data
    values = [_host_value(x, depth) for x in data]
    return data if all(v is x for v, x in zip(values, data, strict=True)) else type(data)(values)


def _host_value(x, depth: int):
    from migrate.emulate.tensor import HOST_SYNC_HOOKS, NpuTensor

    if isinstance(x, NpuTensor):
        for hook in HOST_SYNC_HOOKS:
            hook("item")
        return x._data.detach()
    return _host_values(x, depth + 1)


_NESTING = 32  # list levels looked into (torch.tensor's own limit is deeper)


def _patch_from_data() -> None:
    """torch.tensor(data, device="npu") builds the tensor in C++ through a path a Python
    backend cannot serve (an internal assert in torch 2.13): build it on the CPU, then move."""
    from migrate.emulate.tensor import is_npu_device

    def wrap(make):
        def from_data(data, *args, device=None, requires_grad=False, **kwargs):
            if not is_npu_device(device):  # a CPU tensor of NPU values: kornia's image[:, y, x]
                data = _host_values(data)  # with y, x = zip(*points)
                return make(data, *args, device=device, requires_grad=requires_grad, **kwargs)
            kwargs.pop("pin_memory", None)
            out = make(_host_values(data), *args, **kwargs).to(device)
            return out.requires_grad_() if requires_grad else out

        from_data.__doc__, from_data.__name__ = make.__doc__, make.__name__
        return from_data

    def wrap_as(make):
        def as_tensor(data, dtype=None, device=None):
            if not is_npu_device(device):
                return make(data, dtype=dtype, device=device)
            return make(data, dtype=dtype).to(device)

        as_tensor.__doc__, as_tensor.__name__ = make.__doc__, make.__name__
        return as_tensor

    torch.tensor = _same_builtin(torch.tensor, wrap(torch.tensor))
    torch.as_tensor = _same_builtin(torch.as_tensor, wrap_as(torch.as_tensor))
    torch.asarray = _same_builtin(torch.asarray, wrap(torch.asarray))
    new_tensor = torch.Tensor.new_tensor

    def npu_new_tensor(self, data, dtype=None, device=None, requires_grad=False, **kwargs):
        if device is None and self.device.type == "npu":
            device = self.device
        if not is_npu_device(device):
            return new_tensor(self, data, dtype=dtype, device=device, requires_grad=requires_grad, **kwargs)
        out = torch.tensor(data, dtype=dtype or self.dtype).to(device)
        return out.requires_grad_() if requires_grad else out

    torch.Tensor.new_tensor = npu_new_tensor  # type: ignore[assignment]
