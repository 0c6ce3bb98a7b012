"""Reference implementations, in plain PyTorch, of torch_npu's fused operators.

Each module registers ``torch_npu.<name>`` with ``@FUSED.register(name)``; the function
follows the op's documented semantics (torch_npu/_op_plugin_docs.py in the wheel) and runs
on emulated NPU tensors, so autograd flows through it. While it runs, the monitor records
the one custom op (``npu::<name>``, which has its NPU kernel) and not the ATen ops it is
built from. The name must be a public custom op of the wheel (custom.yaml, exposed).
"""

from __future__ import annotations

import functools

from migrate.core.registry import Registry


def _check(name: str, member, meta: dict) -> None:
    from migrate.emulate.data import surface

    if name not in surface().custom_ops:
        raise ValueError("not a public torch_npu custom op in the registry (custom.yaml)")
    if not callable(member):
        raise TypeError("a fused op must be callable")


FUSED: Registry = Registry("fused op", "migrate.emulate.fused", check=_check)


def fused_op(name: str):
    """Register a reference implementation as ``torch_npu.<name>`` (monitored as one op)."""

    def wrap(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            from migrate.emulate.monitor import fused_call

            with fused_call(name, args):
                return fn(*args, **kwargs)

        call.reference = fn
        FUSED.add(name, call)
        return call

    return wrap
