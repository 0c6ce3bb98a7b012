"""Host syncs inside a composite op: an op without an NPU kernel that torch's composite
kernel serves runs, on the device, the ops that kernel calls, each on NPU tensors; one of
them may read a value on the host (``torch._grouped_mm`` reads each expert's offset with
``item()``). The emulation runs such an op whole on the CPU values, so the monitor never
sees those calls: :func:`run_watching` runs it under a mode that collects them."""

from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode

from migrate.ops.aten.judge import has_key
from migrate.ops.aten.rows import _host_sync


class InnerSyncs(TorchDispatchMode):
    """Collects (op, why) of every host sync the ops run under it make; a
    CompositeImplicitAutograd op among them (``item``, which calls ``_local_scalar_dense``)
    is followed into what it calls."""

    def __init__(self, judge, syncs: list[tuple[str, str]] | None = None):
        super().__init__()
        self.judge = judge
        self.syncs: list[tuple[str, str]] = [] if syncs is None else syncs

    def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.name()
        found = _host_sync(self.judge, name, args)
        if found:
            self.syncs.append((self.judge.alias(name), found[1]))
        elif has_key(name, "CompositeImplicitAutograd"):
            with InnerSyncs(self.judge, self.syncs):
                return func.decompose(*args, **kwargs)
        return func(*args, **kwargs)


def run_watching(judge, func, args, kwargs, key: str) -> tuple[object, list[tuple[str, str]]]:
    """Run ``func`` on the CPU values of its NPU tensors by torch's composite ``key`` kernel
    (the one serving the NPU: the device runs what it calls), with the host syncs made
    inside."""
    import torch

    from migrate.emulate.tensor import run

    watch = InnerSyncs(judge)

    def kernel(*cpu_args, **cpu_kwargs):
        with watch:
            return func._op_dk(getattr(torch._C.DispatchKey, key), *cpu_args, **cpu_kwargs)

    return run(func, args, kwargs, kernel=kernel), watch.syncs
