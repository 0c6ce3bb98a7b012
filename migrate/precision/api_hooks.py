"""API-level dump (``apis=True``): record the output of every torch function a module's
forward calls, named ``<module>/<function>`` (msprobe's L1), so a fault inside a module's
own code - between its submodules - is located to the function.

A ``TorchFunctionMode`` sees torch.*, torch.nn.functional.* and Tensor method calls. Pure
view and metadata functions (reshape, transpose, size, ...) are not recorded: they cannot
introduce numerical error and would triple the dump.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from migrate.precision.flatten import iter_tensors

SKIP = frozenset(
    """
view view_as reshape reshape_as transpose permute contiguous expand expand_as squeeze
unsqueeze flatten unflatten narrow select split chunk unbind detach size dim numel stride
is_contiguous __getitem__ __setitem__ __len__ __iter__ __format__ __repr__ __bool__ t
element_size data_ptr storage_offset is_floating_point is_complex dtype device shape
requires_grad_ __get__ __set__ tolist item cpu cuda to type type_as clone copy_ new_empty
new_zeros new_ones new_full empty_like zeros_like ones_like full_like arange zeros ones
empty full tensor as_tensor get_device is_nonzero movedim swapaxes swapdims __hash__
__eq__ __ne__ __index__ __int__ __float__ __contains__ __reversed__ _has_compatible_shallow_copy_type
""".split()
)


def _api_name(func: Any) -> str:
    return getattr(func, "__name__", None) or type(func).__name__


class ApiRecorder:
    """Installs the function mode for a :class:`~migrate.precision.dumper.dump`."""

    def __init__(self, owner: Any) -> None:
        import torch

        self.owner = owner
        self.scope: list[str] = []
        self.calls: dict[str, int] = defaultdict(int)
        recorder = self

        class Mode(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                if recorder.scope and not recorder.owner.busy:
                    recorder.record(func, out)
                return out

        self._mode = Mode()

    def __enter__(self) -> ApiRecorder:
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._mode.__exit__(*exc)

    def enter(self, module: str) -> None:
        self.scope.append(module)

    def leave(self, module: str) -> None:
        if self.scope and self.scope[-1] == module:
            self.scope.pop()

    def record(self, func: Any, out: Any) -> None:
        api = _api_name(func)
        if api in SKIP or api.startswith("_"):
            return
        tensors = [t for _, t in iter_tensors(out)]
        if not tensors or not any(t.is_floating_point() or t.is_complex() for t in tensors):
            return
        name = f"{self.scope[-1]}/{api}"
        call = self.calls[name]
        self.calls[name] += 1
        self.owner._record_all(name, call, "api.output", out)
