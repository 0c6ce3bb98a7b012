"""Run a model under dispatch-level capture and collect per-overload verdicts.

Three layers, so that ops torch_npu runs itself are not misreported:

* A TorchFunctionMode sees calls *before* CompositeImplicitAutograd decomposition
  (``torch.matmul``, ``F.scaled_dot_product_attention``, ``_VF.lstm``). When torch_npu has
  a kernel for that composite op, the op is reported and the ops it decomposes into on the
  CPU are not.
* A TorchDispatchMode sees every ATen overload that reaches a kernel, with the module path
  that dispatched it (forward hooks; in backward, the forward module whose autograd node
  is running) and, for ops that are not plainly supported, the user's ``file:line``.
* An overload without an NPU kernel is judged by what serves the NPU's key (judge.py):
  a composite kernel is re-run at its key under a nested capture that only judges, with a
  guard against re-entering an op already being descended into.
"""

from __future__ import annotations

from typing import Any

from migrate.core import threads
from migrate.core.callsite import locations, user_location
from migrate.ops.aten import where
from migrate.ops.aten.fastpath import plain_tensor_call
from migrate.ops.aten.judge import (
    COMPOSITE_KEYS,
    COMPOSITE_REASON,
    FUSED_BACKWARD_REASON,
    Judge,
    from_children,
)
from migrate.ops.aten.rows import Census, _dtype, _fname, _host_sync
from migrate.ops.registry import SUPPORTED, Verdict


class CaptureError(RuntimeError):
    """An internal failure of the capture (not of the user's model)."""


MAX_DEPTH = 8  # nested composite descents; deeper ones are judged by the kernel alone


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:200]}" if text else type(exc).__name__


class Recorder:
    """What the modes do: judge each call, record it in the census, tag autograd nodes."""

    def __init__(self, census: Census, judge: Judge):
        import torch

        self.census, self.judge = census, judge
        self.keys = {k: getattr(torch._C.DispatchKey, k) for k in COMPOSITE_KEYS}
        self.descent_mode: Any = None  # set by make_modes (a TorchDispatchMode class)
        # judge key -> (op, why) of the host syncs its composite kernel made when descended into
        self.inner_syncs: dict[str, list[tuple[str, str]]] = {}

    @property
    def pending(self) -> list:
        """(outputs, origin) of the current thread's last op, tagged once autograd ran."""
        return self.census.local.pending

    def flush(self) -> None:
        while self.pending:
            outs, origin = self.pending.pop()
            where.tag_outputs(outs if isinstance(outs, (list, tuple)) else (outs,), origin)

    def known(self, name: str, sparse: str | None = None) -> Verdict | None:
        """The verdict of ``name`` (on tensors of torch_npu's ``sparse`` key when given), or
        None: re-run it at the composite key that serves it (``descend``)."""
        judge = self.judge
        at = _at(name, sparse)
        verdict = judge.cache.get(at)
        if verdict is None and at not in judge.descend:
            verdict = judge.direct(name) if sparse is None else judge.sparse(name, sparse)
            if verdict is not None:
                judge.cache[at] = verdict
        return verdict

    def _judged_alone(self, at: str, key: str, func, args, kwargs, why: str, error: str):
        self.census.errors.append(error)
        verdict = Verdict(SUPPORTED, f"torch's {key} kernel serves the NPU ({why})")
        self.judge.cache[at] = verdict
        return verdict, func(*args, **kwargs)

    def descend(self, func, name, args, kwargs, chain, sparse=None) -> tuple[Verdict, object]:
        """Re-run ``func`` at the composite key serving the NPU; judge what it calls."""
        at = _at(name, sparse)
        key = self.judge.descend[at]
        if len(chain) > MAX_DEPTH:
            return self._judged_alone(
                at,
                key,
                func,
                args,
                kwargs,
                "nested too deep to check what it calls",
                f"{name}: composites nested deeper than {MAX_DEPTH} ({' -> '.join(chain)}); "
                f"judged by torch's {key} kernel alone",
            )
        mode = self.descent_mode(chain)
        try:
            with mode:
                out = func._op_dk(self.keys[key], *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - reported below, never swallowed
            if mode.seen:
                raise CaptureError(
                    f"re-running {name} at {key} failed after it had called "
                    f"{len(mode.seen)} ops ({_first_line(exc)})"
                ) from exc
            return self._judged_alone(
                at,
                key,
                func,
                args,
                kwargs,
                "what it calls could not be checked: see errors",
                f"{name}: could not re-run torch's {key} kernel to judge what it calls "
                f"({_first_line(exc)}); judged by the kernel alone",
            )
        verdict = from_children(name, key, mode.seen)
        self.judge.cache[at] = verdict
        if mode.syncs:
            self.inner_syncs[at] = mode.syncs
        return verdict, out

    def composite_call(self, func, args, kwargs):
        """A torch-function call of a composite op torch_npu implements: recorded as itself,
        the CPU decomposition it runs here is not."""
        import torch

        census = self.census
        fname = _fname(func, self.judge.reg.python_forwards)
        plain = plain_tensor_call(self.judge.reg, fname, args, kwargs)
        if plain is not None:  # the device's tensors take the op's plain-tensor path
            args, kwargs = plain
        if not census.suppress and fname in self.judge.reg.host_sync_calls:
            self.flush()
            location = user_location(3)
            census.warn(
                f"Tensor.{fname}", "host-sync", self.judge.reg.host_sync_calls[fname], census.module, location
            )
        op = None if census.suppress else self.judge.composite(fname, args, kwargs)
        if op is None:
            return func(*args, **kwargs)
        self.flush()
        path = census.module
        location = user_location(3) if census.locate_all else None
        census.add(op, Verdict(SUPPORTED, COMPOSITE_REASON), _dtype(args), path, None)
        sync = _host_sync(self.judge, op, args)
        if sync and census.phase != "optimizer":
            census.warn(op, sync[0], sync[1], path, location or user_location(3))
        census.suppress += 1
        try:
            out = func(*args, **kwargs)
        finally:
            census.suppress -= 1
        if torch.is_grad_enabled():
            where.tag_fused(out, (args, tuple(kwargs.values())), op)
            self.pending.append((out, (path, location)))
            self.flush()
        return out

    def dispatch_call(self, func, args, kwargs):
        """An ATen overload reaching a kernel: judged, recorded where it came from."""
        import torch

        census = self.census
        if census.suppress or func.name().startswith("profiler::"):
            return func(*args, **kwargs)  # inside a recorded composite / record_function marks
        self.flush()
        fused = where.current_fused_backward()
        if fused is not None:  # the backward of a kernel torch_npu runs whole
            out = func(*args, **kwargs)
            origin = census.origin()
            census.add(
                fused,
                Verdict(SUPPORTED, FUSED_BACKWARD_REASON),
                _dtype(args),
                origin[0] if origin else census.module,
                None,
                phase="backward",
                calls=0,
            )
            return out
        name = func.name()
        sparse = self.judge.sparse_key(_tensors(args, kwargs), kwargs)
        verdict = self.known(name, sparse)
        if verdict is None:
            verdict, out = self.descend(func, name, args, kwargs, (name,), sparse)
        else:
            out = func(*args, **kwargs)
        sync = _host_sync(self.judge, name, args)
        inner = self.inner_syncs.get(_at(name, sparse), ())
        origin = census.origin()
        path = origin[0] if origin else census.module
        location, via = (
            (origin[1], None)
            if origin
            else (
                locations(3)
                if census.locate_all or sync or inner or verdict.status != SUPPORTED
                else (None, None)
            )
        )
        dtype, op = _dtype(args), self.judge.alias(name)
        census.add(
            op,
            verdict,
            dtype,
            path,
            location,
            None if dtype is None else self.judge.reg.weak_dtypes.get(dtype),
            origin[2] if origin else None,
            sparse=sparse,
            via=via,
        )
        if sync and census.phase != "optimizer":  # optimizers keep `step` on the host
            census.warn(op, sync[0], sync[1], path, location)
        for child, why in inner if census.phase != "optimizer" else ():
            census.warn(
                op, "host-sync", f"its composite kernel calls {child} on the NPU: {why}", path, location
            )
        if census.phase in ("forward", "loss") and not origin and torch.is_grad_enabled():
            if where.taggable(func):  # no autograd nodes under no_grad
                self.pending.append((out, (path, location)))
        return out

    def descent_call(self, mode, func, args, kwargs):
        """Inside a descent: judge without recording; a kernel re-entering itself is skipped."""
        name = func.name()
        sparse = self.judge.sparse_key(_tensors(args, kwargs), kwargs)
        verdict = self.known(name, sparse)
        if verdict is None and name in mode.chain:
            return func(*args, **kwargs)  # the kernel re-enters itself (detach -> detach)
        if verdict is None:
            verdict, out = self.descend(func, name, args, kwargs, mode.chain + (name,), sparse)
        else:
            out = func(*args, **kwargs)
        mode.seen.append((self.judge.alias(name), verdict))
        sync = _host_sync(self.judge, name, args)
        if sync:
            mode.syncs.append((self.judge.alias(name), sync[1]))
        mode.syncs += self.inner_syncs.get(_at(name, sparse), [])  # a composite it called
        return out


def _at(name: str, sparse: str | None) -> str:
    """The judge's cache key: the overload, prefixed by the sparse key it is judged at."""
    return name if sparse is None else f"{sparse}:{name}"


def _tensors(args, kwargs) -> list:
    """The tensors an op is given (top level and in lists: TensorList arguments)."""
    out: list = []
    for a in (*args, *kwargs.values()):
        out.extend(a if isinstance(a, (list, tuple)) else (a,))
    return out


def make_modes(census: Census, judge: Judge):
    """(TorchFunctionMode class, TorchDispatchMode class, flush) bound to ``census``."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    rec = Recorder(census, judge)

    class Descent(TorchDispatchMode):
        def __init__(self, chain: tuple[str, ...]):
            super().__init__()
            self.chain = chain
            self.seen: list = []
            self.syncs: list[tuple[str, str]] = []  # (op, why) of the host syncs it made

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return rec.descent_call(self, func, args, kwargs or {})

    class FunctionMode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return rec.composite_call(func, args, kwargs or {})

    class DispatchMode(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.thread = threads.name()  # the thread whose mode stack it is on

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            census.local.owner = self.thread
            return rec.dispatch_call(func, args, kwargs or {})

    rec.descent_mode = Descent
    return FunctionMode, DispatchMode, rec.flush


def module_hooks(model, census: Census, flush) -> list:
    handles = []
    for name, module in model.named_modules():
        path = name or "<root>"

        def pre(_m, _a, path=path):
            flush()
            census.stack.append(path)

        def post(_m, _a, _o):
            flush()
            if census.stack:
                census.stack.pop()

        handles.append(module.register_forward_pre_hook(pre))
        handles.append(module.register_forward_hook(post))
    return handles
