"""NPU tensors on the CPU: a wrapper subclass whose device is ``npu:N`` and which holds a CPU
tensor, plus the one dispatch rule every op goes through.

Ops that see an NPU tensor reach ``NpuTensor.__torch_dispatch__`` (below autograd, so
autograd, views and in-place tracking stay PyTorch's own); factories asked for
``device="npu"`` reach the PrivateUse1 fallback registered in backend.py. Both call
:func:`run`: check devices as an accelerator would, run the op on the CPU tensors, wrap the
results back onto the NPU device. Outputs that alias an input (in-place ops, ``out=``) are
returned as that input, so identity is kept.
"""

from __future__ import annotations

import contextvars

import torch

from migrate.emulate.data import settings
from migrate.emulate.kernels import KERNELS

CPU = torch.device("cpu")


# Called with a method's name when a tensor method reads values on the host without an op;
# the monitor (which imports this module) adds its recorder here.
HOST_SYNC_HOOKS: list = []


_COMPRESSED = (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)


class NpuTensor(torch.Tensor):
    """A tensor on an emulated NPU; ``_data`` is the CPU tensor holding its values."""

    _data: torch.Tensor

    @staticmethod
    def __new__(cls, data: torch.Tensor, device: torch.device):
        # Compressed sparse layouts (CSR, CSC, BSR, BSC) have no strides, and only torch's
        # own sparse-compressed impl answers their layout: the wrapper asks ``_data``.
        compressed = data.layout in _COMPRESSED
        out = torch.Tensor._make_wrapper_subclass(
            cls,
            data.size(),
            strides=None if compressed else data.stride(),
            storage_offset=None if compressed else data.storage_offset(),
            dtype=data.dtype,
            layout=data.layout,
            device=device,
            requires_grad=False,
            dispatch_sizes_strides_policy="sizes",
            dispatch_layout=compressed,
        )  # sizes asked of _data: out= may resize it
        out._data = data
        return out

    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):  # type: ignore[override]  # torch's protocol
        return run(func, args, kwargs or {})

    def __repr__(self, *, tensor_contents=None):
        text = repr(self._data.detach())
        extra = f", device='{self.device}'"
        if self.grad_fn is not None:
            extra += f", grad_fn=<{type(self.grad_fn).__name__}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return text[:-1] + extra + ")" if text.endswith(")") else text

    @property
    def data(self):
        return torch._C.TensorBase.data.__get__(self)

    @data.setter
    def data(self, new) -> None:
        # ``param.data = t`` (Module.to/half/float, channels_last, user code) swaps the tensor
        # under the Python object in C++, which never reaches __torch_dispatch__: the CPU
        # tensor it holds is swapped here too.
        torch._C.TensorBase.data.__set__(self, new)
        self._data = new._data if isinstance(new, NpuTensor) else new

    def __reduce_ex__(self, protocol):
        # Saved as torch_npu saves it: the values, in a storage whose location is npu:0
        # (serialize.py), so torch.load gives an NPU tensor back unless map_location says
        # otherwise, and a CPU host reads the file with map_location="cpu".
        from migrate.emulate.serialize import reduce_npu

        return reduce_npu(self)

    def __getitem__(self, index):
        return super().__getitem__(_index_tensors(index))

    def __setitem__(self, index, value) -> None:
        super().__setitem__(_index_tensors(index), value)

    def data_ptr(self) -> int:
        return self._data.data_ptr()

    def untyped_storage(self):
        return self._data.untyped_storage()

    def __format__(self, format_spec):
        # torch formats a 0-dim tensor as its value only when its type is exactly Tensor, as
        # an NPU tensor's is on the device (f"{acc1:6.2f}"): a host sync there, as here.
        if self.dim() == 0:
            return self.detach().item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def numpy(self, *, force: bool = False):
        raise TypeError(
            f"can't convert {self.device} device type tensor to numpy. Use "
            "Tensor.cpu() to copy the tensor to host memory first."
        )

    def tolist(self):
        for hook in HOST_SYNC_HOOKS:  # the monitor's record_host_sync, once it is imported
            hook("tolist")
        return self._data.tolist()


def _is_index_sequence(obj) -> bool:
    """A list index that PyTorch reads as a tuple of indices (its treatSequenceAsTuple)."""
    return len(obj) < 32 and any(
        isinstance(o, (torch.Tensor, list, tuple, slice)) or o is None or o is Ellipsis for o in obj
    )


def _index_tensors(index):
    """Sequence indices (a list, a range; a list, tuple or range inside a tuple index:
    ``x[range(n), y]``) as CPU index tensors: PyTorch turns a sequence into a tensor on the
    indexed tensor's device in C++, through a path a Python backend cannot serve (an
    internal assert); a CPU index tensor is what the NPU's indexing kernels accept too."""
    if isinstance(index, (list, range)) and not _is_index_sequence(index):
        return _as_tensor(index)
    if isinstance(index, (tuple, list)):
        return tuple(_as_tensor(i) if isinstance(i, (list, tuple, range)) else i for i in index)
    return index


def _as_tensor(items: list | tuple | range) -> torch.Tensor:
    return torch.tensor(list(items)) if len(items) else torch.tensor([], dtype=torch.long)


def is_npu_device(dev) -> bool:
    return (
        isinstance(dev, torch.device)
        and dev.type == "npu"
        or (isinstance(dev, str) and dev.split(":", 1)[0] == "npu")
    )


def _npu_device(dev) -> torch.device:
    """The device an NPU tensor carries: always npu:0. PyTorch's autograd engine keeps one
    queue per device of a Python backend, so tensors on npu:1.. could not run backward;
    torch.npu.current_device() still answers the index the program set (docs/emulate.md)."""
    dev = torch.device(dev)
    if dev.index is not None and dev.index >= settings().device_count:
        raise RuntimeError(
            f"npu:{dev.index}: invalid device ordinal (the emulation has {settings().device_count} devices)"
        )
    return torch.device("npu", 0)


def _unwrap(x):
    if isinstance(x, NpuTensor):
        return x._data
    if isinstance(x, torch.device) and x.type == "npu":
        return CPU
    return x


_MUTABLE: dict = {}  # op overload -> does it write into an argument (asked once per op)


def _has_lazy_bits(func, flat: list) -> bool:
    """Does a non-writing op get a conjugate or negative view (see _unwrap_resolved)?"""
    lazy = any(isinstance(t, NpuTensor) and (t._data.is_conj() or t._data.is_neg()) for t in flat)
    if not lazy:
        return False
    mutable = _MUTABLE.get(func)
    if mutable is None:
        mutable = _MUTABLE[func] = func._schema.is_mutable
    return not mutable


def _unwrap_resolved(x):
    """``_unwrap``, a conjugate or negative view (``torch.conj(y)``) made plain first: below
    the wrapper, where its op runs, the Conjugate and Negative keys are passed already, and
    the CPU kernel read the view as if its bit were not set (kornia's fft_conv multiplied by
    ``y`` instead of ``conj(y)``). Ops that write into an argument keep it as it is."""
    x = _unwrap(x)
    if isinstance(x, torch.Tensor) and (x.is_conj() or x.is_neg()):
        return x.resolve_conj().resolve_neg()
    return x


class DeviceMismatch(RuntimeError):
    pass


# The op running through the emulated CPU fallback (set by the monitor for an op with no NPU
# kernel): torch_npu's fallback moves every argument to the CPU and the results back to the
# NPU, checking no devices, so a CPU tensor beside NPU ones is no mismatch there.
CPU_FALLBACK: contextvars.ContextVar = contextvars.ContextVar("cpu_fallback", default=None)


def target_device(func, flat: list, kwargs: dict) -> torch.device | None:
    """The NPU device the op runs on (None: it runs on the CPU), after the same device
    checks an accelerator makes."""
    npu = {t.device for t in flat if isinstance(t, NpuTensor)}
    if "device" in kwargs and kwargs["device"] is not None:
        asked = kwargs["device"]
        if not is_npu_device(asked):
            return None
        npu = npu or {_npu_device(asked)}
    if len(npu) > 1:
        a, b = sorted(str(d) for d in npu)[:2]
        raise DeviceMismatch(
            f"Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!"
        )
    if not npu:
        return None
    dev = next(iter(npu))
    name = func.name().split("::", 1)[-1]
    if CPU_FALLBACK.get() is func:
        return dev  # the CPU fallback: arguments moved to the CPU, results to ``dev``
    if name not in settings().cross_device_ops and name.removesuffix(".default") not in (
        settings().cross_device_ops
    ):
        for t in flat:
            if (
                isinstance(t, torch.Tensor)
                and not isinstance(t, NpuTensor)
                and t.device.type == "cpu"
                and t.dim() > 0
            ):
                raise DeviceMismatch(
                    f"Expected all tensors to be on the same device, but "
                    f"found at least two devices, {dev} and cpu! "
                    f"(in {func.name()})"
                )
    return dev


def _map(fn, obj):
    """tree_map for what op arguments hold (tuples, lists, dicts): much cheaper than pytree,
    which costs more than the op itself for small tensors."""
    if isinstance(obj, (tuple, list)):
        return (
            type(obj)(_map(fn, o) for o in obj)
            if not hasattr(obj, "_fields")
            else (type(obj)(*(_map(fn, o) for o in obj)))
        )
    if isinstance(obj, dict):
        return {k: _map(fn, v) for k, v in obj.items()}
    return fn(obj)


def _leaves(obj, out: list) -> list:
    if isinstance(obj, (tuple, list)):
        for o in obj:
            _leaves(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _leaves(o, out)
    else:
        out.append(obj)
    return out


def run(func, args: tuple, kwargs: dict, kernel=None):
    """Run ``func`` (or ``kernel``, called as ``func`` would be) on the CPU values of its NPU
    tensors; the results are the NPU tensors holding the outputs."""
    name = func._opname
    if name in settings().metadata_ops:  # sizes/strides of the CPU tensor: the hot path
        return func(args[0]._data if isinstance(args[0], NpuTensor) else args[0], *args[1:])
    if name in settings().noop_ops:
        return None
    flat = _leaves(kwargs, _leaves(args, []))
    dev = target_device(func, flat, kwargs)
    inputs = {id(_unwrap(t)): t for t in flat if isinstance(t, torch.Tensor)}
    unwrap = _unwrap_resolved if _has_lazy_bits(func, flat) else _unwrap
    out = (kernel or KERNELS.get(name, func))(*_map(unwrap, args), **_map(unwrap, kwargs))

    def wrap(o):
        if not isinstance(o, torch.Tensor):
            return o
        same = inputs.get(id(o))
        if same is not None and (dev is not None or not isinstance(same, NpuTensor)):
            return same  # an alias of an input (in-place, out=) is that input
        # ``aten::to`` asked for the CPU returns its (CPU) input itself: a new CPU tensor,
        # not the NPU tensor it was called on (DTensor's RNG tracker: ``state.to("cpu")``)
        if dev is None or o.device.type != "cpu":
            return o
        return NpuTensor(o, dev)

    return _map(wrap, out)


def to_npu(t: torch.Tensor, device=None) -> NpuTensor:
    """A CPU tensor's values as a new tensor on the emulated NPU (no autograd link)."""
    return NpuTensor(t.detach().clone(), _npu_device(device or "npu"))


def install_sharing() -> None:
    """An NPU tensor sent to another process (torch.multiprocessing: a model passed to
    ``mp.Process``, Hogwild) arrives on the NPU, over the same shared memory: its CPU
    values go as torch sends a CPU tensor (moved to shared memory), and are wrapped again
    there. Without this, torch's pickle of the CPU storage rebuilt CPU tensors."""
    from multiprocessing.reduction import ForkingPickler

    ForkingPickler.register(NpuTensor, _reduce_shared)


def _reduce_shared(tensor):
    is_param = bool(getattr(tensor, "_is_param", False))
    return (_rebuild_shared, (tensor._data.detach(), tensor.requires_grad, is_param))


def _rebuild_shared(data: torch.Tensor, requires_grad: bool, is_param: bool) -> torch.Tensor:
    out = NpuTensor(data, torch.device("npu", 0))
    if is_param:
        return torch.nn.Parameter(out, requires_grad=requires_grad)
    return out.requires_grad_() if requires_grad else out
