"""What the real device would do differently, seen while the program runs: every ATen op on
an NPU tensor with no NPU kernel in the op registry (torch_npu's CPU-fallback warning),
dtypes NPU kernels lack, host syncs; each with the module path and the user's file:line.

A TorchDispatchMode sees ops on NPU tensors before the emulation runs them; a
TorchFunctionMode sees CompositeImplicitAutograd ops (torch.matmul, SDPA) first, so that one
torch_npu has a kernel for is judged as itself and not by what it decomposes into on the CPU
(the judgement is migrate.ops.aten.judge.Judge, shared with ``migrate ops --torch``).
"""

from __future__ import annotations

import contextlib
import types
import warnings

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from migrate.core import threads
from migrate.emulate import modules, origins
from migrate.emulate.callsite import call_site, where, where_via
from migrate.emulate.data import settings
from migrate.emulate.inner import run_watching
from migrate.emulate.kernels import KERNELS
from migrate.emulate.perf import PerfRecord, watch_steps
from migrate.emulate.report import add_via
from migrate.emulate.tensor import CPU_FALLBACK, HOST_SYNC_HOOKS, NpuTensor, _leaves, is_npu_device
from migrate.ops.aten.fastpath import plain_tensor_call
from migrate.ops.aten.judge import NO_KERNEL_REASON, namespace
from migrate.ops.aten.rows import _host_sync
from migrate.ops.aten.where import current_fused_backward, tag_fused

SUPPORTED = "supported"
CPU_FALLBACK_STATUS = "cpu-fallback"


def _site() -> str:
    site = where(4)
    return "<backward>" if site.startswith("<unknown>") and modules.current() == "<backward>" else site


_VIEWS: dict = {}


def _is_view(func) -> bool:
    """A view or alias op (no kernel runs on the device): not a shape that compiles."""
    got = _VIEWS.get(func)
    if got is None:
        schema = func._schema
        got = _VIEWS[func] = any(r.alias_info is not None for r in schema.returns) and not schema.is_mutable
    return got


_METADATA = settings().metadata_ops


class Record:
    """All findings of one process; ops run in threads other than the main one are also
    counted per thread name (``threads``), their findings carry the thread."""

    def __init__(self, target: str | None = None):
        from migrate.ops.aten.judge import Judge

        self.judge = Judge(target)
        self.ops: dict[str, int] = {}
        self.threads: dict[str, int] = {}
        self.findings: dict[tuple, dict] = {}
        self.notes: list[str] = []
        self.local = threads.PerThread()
        self.pending: list = []  # (outputs, site) of differentiable ops (origins.py)
        self.perf = PerfRecord()

    @property
    def suppress(self) -> int:
        return self.local.suppress

    @suppress.setter
    def suppress(self, value: int) -> None:
        self.local.suppress = value

    def count(self, op: str) -> None:
        self.ops[op] = self.ops.get(op, 0) + 1
        thread = self.local.attributed()
        if thread is not None:
            self.threads[thread] = self.threads.get(thread, 0) + 1

    def add(
        self,
        kind: str,
        what: str,
        reason: str,
        at: tuple[str, str | None] | None = None,
        module: str | None = None,
        dtype: str | None = None,
    ) -> None:
        """One finding; ``at``: (site, via) as callsite.where_via gives them (default: this
        call's)."""
        module = module or modules.current()
        if module == origins.BACKWARD:
            site, via = origins.backward_site(self.pending) or origins.BACKWARD, None
        else:
            site, via = at or where_via(3)
        thread = self.local.attributed()
        key = (kind, what, dtype, module, site, thread)
        row = self.findings.get(key)
        if row is None:
            row = self.findings[key] = {
                "kind": kind,
                "op": what,
                "dtype": dtype,
                "module": module,
                "site": site,
                "count": 0,
                "reason": reason,
            }
            if thread is not None:
                row["thread"] = thread
        row["count"] += 1
        if via is not None:  # the installed library's line inside the user's call
            add_via(row, via)
        if kind == "host_sync":
            self.perf.sync()


RECORD: dict[str, Record | None] = {"current": None}


def _dtype_of(flat) -> list[str]:
    return sorted({str(t.dtype).removeprefix("torch.") for t in flat if isinstance(t, NpuTensor)})


def _on_npu(flat, kwargs) -> bool:
    return any(isinstance(t, NpuTensor) for t in flat) or is_npu_device(kwargs.get("device"))


class DispatchMonitor(TorchDispatchMode):
    def __init__(self, rec: Record):
        super().__init__()
        self.rec, self.thread = rec, threads.name()  # the thread whose mode stack it is on

    def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        rec = self.rec
        rec.local.owner = self.thread
        if rec.suppress or func._opname in _METADATA:
            return func(*args, **kwargs)
        if rec.pending:
            origins.flush(rec.pending)
        flat = _leaves(kwargs, _leaves(args, []))
        sparse = rec.judge.sparse_key(flat, kwargs) if _on_npu(flat, kwargs) else None
        if sparse is not None:
            _no_kernel_for_layout(rec, func, sparse)
            composite = rec.judge.descend.get(f"{sparse}:{func.name()}")
            if composite is not None:
                out = _run_composite(rec, func, args, kwargs, composite)
                rec.perf.op(func.name(), _leaves(out, flat), NpuTensor, _site)
                return out
        out = _call(rec, func, args, kwargs, flat if sparse is None else None)
        flat = _leaves(out, flat)
        if not _on_npu(flat, kwargs):
            return out
        if current_fused_backward() is not None:
            return out  # the backward of a kernel torch_npu runs whole (FunctionMonitor)
        name = func.name()
        if namespace(name) not in settings().unjudged_namespaces:
            verdict = self._judge(rec, name, sparse)
            if verdict.reason == NO_KERNEL_REASON:
                return out  # a metadata query, not an op a device runs
            if verdict.status != SUPPORTED:
                self._fallback(rec, name, verdict)
        rec.count(name)
        origins.note_forward(rec.pending, func, flat, out)
        rec.perf.op(name, flat, NpuTensor, _site, shaped=not _is_view(func))
        sync = _sync_reason(rec, func, name, args, kwargs)
        if sync:
            rec.add("host_sync", name, sync)
        weak = rec.judge.reg.weak_dtypes
        for dt in _dtype_of(flat):
            if dt in weak:
                rec.add("dtype", name, weak[dt], dtype=dt)
        return out

    @staticmethod
    def _judge(rec, name, sparse=None):
        """The verdict of ``name``; on sparse tensors, at torch_npu's ``sparse`` key."""
        judge = rec.judge
        at = name if sparse is None else f"{sparse}:{name}"
        verdict = judge.cache.get(at)
        if verdict is None:
            verdict = judge.direct(name) if sparse is None else judge.sparse(name, sparse)
            if verdict is None:  # CompositeExplicitAutograd: judged by what it calls
                verdict = _composite_verdict(judge, name, sparse)
            judge.cache[at] = verdict
        return verdict

    @staticmethod
    def _fallback(rec, name, verdict) -> None:
        op = rec.judge.alias(name)
        if not any(k[0] == "cpu_fallback" and k[1] == op for k in rec.findings):
            path, line = call_site(4)
            warnings.warn_explicit(
                f"CAUTION: The operator '{op}' is not currently supported on the NPU "
                "backend and will fall back to run on the CPU (torch_npu's warning on the "
                "device; emulated)",
                UserWarning,
                path,
                line,
            )
        rec.add("cpu_fallback", op, verdict.reason, at=where_via(4))


def _call(rec, func, args, kwargs, dense_flat):
    """Run the op; one on dense NPU tensors that has no NPU kernel runs as torch_npu's CPU
    fallback runs it (no device checks: its arguments are moved to the CPU)."""
    if dense_flat is None or not _on_npu(dense_flat, kwargs):
        return func(*args, **kwargs)
    name = func.name()
    if namespace(name) in settings().unjudged_namespaces:
        return func(*args, **kwargs)
    status = DispatchMonitor._judge(rec, name).status
    key = rec.judge.descend.get(name)
    if status == SUPPORTED and key is not None and not _is_view(func) and func._opname not in KERNELS:
        out, syncs = run_watching(rec.judge, func, args, kwargs, key)  # the composite's ops
        for child, why in syncs:
            rec.add(
                "host_sync", name, f"its composite kernel calls {child} on the NPU: {why}", at=where_via(4)
            )
        return out
    if status != CPU_FALLBACK_STATUS:
        return func(*args, **kwargs)
    token = CPU_FALLBACK.set(func)
    try:
        return func(*args, **kwargs)
    finally:
        CPU_FALLBACK.reset(token)


def _run_composite(rec, func, args, kwargs, key: str):
    """An op on sparse NPU tensors that torch_npu has no kernel for at their key, served by
    torch's composite ``key`` kernel: the kernel runs on the CPU values (as every emulated op
    does) under :class:`SparseDescent`, which judges each op it calls at that op's own key,
    so one without a kernel there raises as on the device (``torch.sparse.mm`` of a COO
    matrix: ``_sparse_addmm`` calls ``addmm``, which has no SparseNPU kernel). The kernel is
    never run with the NPU wrappers themselves: sparse kernels reach into the C++ sparse
    tensor they are given."""
    from migrate.emulate.tensor import run

    def kernel(*cpu_args, **cpu_kwargs):
        with SparseDescent(rec, (func.name(),)):
            return func._op_dk(getattr(torch._C.DispatchKey, key), *cpu_args, **cpu_kwargs)

    return run(func, args, kwargs, kernel=kernel)


class SparseDescent(TorchDispatchMode):
    """Inside a composite run for sparse NPU tensors: each op is judged (at its sparse key
    when its tensors are sparse), a composite one is descended into in turn, an unsupported
    one raises, one without an NPU kernel is reported as a CPU fallback."""

    def __init__(self, rec: Record, chain: tuple[str, ...]):
        super().__init__()
        self.rec, self.chain = rec, chain

    def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        rec, name = self.rec, func.name()
        if func._opname in _METADATA or namespace(name) in settings().unjudged_namespaces:
            return func(*args, **kwargs)
        sparse = rec.judge.sparse_key(_leaves(kwargs, _leaves(args, [])), kwargs)
        if sparse is not None:
            _no_kernel_for_layout(rec, func, sparse)
            composite = rec.judge.descend.get(f"{sparse}:{name}")
            if composite is not None and name not in self.chain:
                with SparseDescent(rec, (*self.chain, name)):
                    return func._op_dk(getattr(torch._C.DispatchKey, composite), *args, **kwargs)
        verdict = DispatchMonitor._judge(rec, name, sparse)
        if verdict.status != SUPPORTED and verdict.reason != NO_KERNEL_REASON:
            DispatchMonitor._fallback(rec, name, verdict)
        rec.count(name)
        return func(*args, **kwargs)


def _no_kernel_for_layout(rec, func, sparse: str) -> None:
    """An op on sparse NPU tensors that torch_npu has no kernel for at their key (SparseNPU,
    SparseCsrNPU) fails on the device (its CPU fallback serves dense tensors only): reported,
    then raised as the device raises it."""
    from migrate.ops.aten.judge import SPARSE_DISPATCH_KEY

    name = func.name()
    verdict = DispatchMonitor._judge(rec, name, sparse)
    if verdict.status == SUPPORTED:
        return
    rec.add("unsupported", name, verdict.reason, at=where_via(4))
    raise NotImplementedError(
        f"Could not run '{name}' with arguments from the "
        f"'{SPARSE_DISPATCH_KEY[sparse]}' backend (emulated NPU: {verdict.reason})"
    )


def _sync_reason(rec, func, name, args, kwargs) -> str | None:
    """Why the op makes the host wait: the registry's host syncs (shared with ``migrate ops
    --torch``), or a copy from the NPU to the host."""
    found = _host_sync(rec.judge, name, args)
    if found:
        return found[1]
    copy = settings().host_copy_ops.get(func._opname)
    if copy and _is_host_copy(func._opname, args, kwargs):
        return copy
    return None


def _composite_verdict(judge, name, sparse=None):
    """A composite serving the NPU key. A structured op's NonFunctional kernel calls its
    ``.out`` overload, which the emulated backend never shows us: judge that overload. Any
    other composite runs through the ops it calls, each judged when it runs."""
    from migrate.ops.aten.judge import structured_delegates
    from migrate.ops.registry import Verdict, aten_name

    out = structured_delegates().get(aten_name(name))
    at = name if sparse is None else f"{sparse}:{name}"
    if judge.descend.get(at) == "CompositeExplicitAutogradNonFunctional" and out:
        out = f"aten::{out}" if not out.startswith("aten::") else out
        if sparse is None:
            return judge.reg.lookup(out)
        found = judge.sparse(out, sparse)
        if found is not None:
            return found
    return Verdict(
        SUPPORTED,
        "composite op: on the NPU it runs through the ops it calls "
        "(not seen here: the emulation runs it whole)",
    )


def _is_host_copy(name: str, args, kwargs) -> bool:
    if name == "_to_copy":
        dev = kwargs.get("device")
        return dev is not None and not is_npu_device(dev) and isinstance(args[0], NpuTensor)
    return not isinstance(args[0], NpuTensor) and isinstance(args[1], NpuTensor)


class FunctionMonitor(TorchFunctionMode):
    """Records CompositeImplicitAutograd ops that torch_npu runs as one kernel."""

    def __init__(self, rec: Record):
        super().__init__()
        self.rec = rec

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        rec = self.rec
        name = getattr(func, "__name__", "") or ""
        if isinstance(func, types.FunctionType):
            name = rec.judge.reg.python_forwards.get(name, "")
        plain = plain_tensor_call(rec.judge.reg, name, args, kwargs) if name else None
        if plain is not None:  # the device's tensors take the op's plain-tensor path
            args, kwargs = plain
        op = rec.judge.composite(name, args, kwargs) if name and not rec.suppress else None
        if op is None or not _on_npu(_leaves(kwargs, _leaves(args, [])), kwargs):
            return func(*args, **kwargs)
        rec.count(op)
        rec.perf.op(op, _leaves(kwargs, _leaves(args, [])), NpuTensor, _site)
        sync = _host_sync(rec.judge, op, args)
        if sync:
            rec.add("host_sync", op, sync[1])
        rec.suppress += 1
        try:
            out = func(*args, **kwargs)
        finally:
            rec.suppress -= 1
        if torch.is_grad_enabled():
            tag_fused(out, (args, tuple(kwargs.values())), op)
        return out


@contextlib.contextmanager
def fused_call(name: str, args):
    """A torch_npu fused op's reference implementation: recorded as ``npu::<name>``."""
    rec = RECORD["current"]
    if rec is None:
        yield
        return
    if not rec.suppress:
        op = f"npu::{name}"
        rec.count(op)
    rec.suppress += 1
    try:
        yield
    finally:
        rec.suppress -= 1


@contextlib.contextmanager
def unmonitored():
    """Code that stands for torch_npu's own (its GradScaler's internals): not reported."""
    rec = RECORD["current"]
    if rec is None:
        yield
        return
    rec.suppress += 1
    try:
        yield
    finally:
        rec.suppress -= 1


def record_sync(what: str, depth: int = 2) -> None:
    rec = RECORD["current"]
    if rec is not None:
        rec.add("host_sync", what, "waits for the device to finish", at=where_via(depth))


def record_host_sync(call: str) -> None:
    """A Tensor method that reads values on the host without an op (``tolist``)."""
    rec = RECORD["current"]
    if rec is not None and not rec.suppress:
        why = rec.judge.reg.host_sync_calls.get(call, "reads the tensor on the host")
        rec.add("host_sync", f"Tensor.{call}", why, at=where_via(3))


HOST_SYNC_HOOKS.append(record_host_sync)


def record_note(note: str) -> None:
    rec = RECORD["current"]
    if rec is not None and note not in rec.notes:
        rec.notes.append(note)


def start(target: str | None = None) -> Record:
    """Monitor the rest of this process (modes stay pushed until it exits)."""
    if RECORD["current"] is not None:
        return RECORD["current"]
    rec = Record(target)
    RECORD["current"] = rec
    watch_steps(rec.perf)
    modules.install()
    FunctionMonitor(rec).__enter__()
    DispatchMonitor(rec).__enter__()
    threads.in_new_threads(lambda: _monitored(rec))
    return rec


@contextlib.contextmanager
def _monitored(rec: Record):
    """The monitor's modes, in the thread that enters them (the modes' stack is per thread)."""
    with FunctionMonitor(rec), DispatchMonitor(rec):
        yield
