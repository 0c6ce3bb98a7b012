"""Per-overload verdicts for ATen ops against one torch_npu registry version.

How the dispatcher serves an op on the NPU's key (PrivateUse1) decides the verdict:

1. torch_npu registers a kernel for the overload (the registry data): ``supported``.
2. Else the first composite kernel of stock torch that serves a backend key, in the
   dispatcher's order -- CompositeExplicitAutogradNonFunctional, CompositeExplicitAutograd,
   CompositeImplicitAutograd -- runs on the NPU and calls other ops: the capture re-runs the
   op at that key under a nested capture and judges what it calls (``descend``). A structured
   functional op (``gelu``) is judged by its ``.out`` overload without re-running.
3. Else torch_npu's boxed fallback runs it on the CPU: ``cpu-fallback``.
"""

from __future__ import annotations

from functools import cache

from migrate.ops.registry import (
    CPU_FALLBACK,
    SUPPORTED,
    UNSUPPORTED,
    AtenRegistry,
    Verdict,
    aten_name,
    load_aten,
)

# The chips a verdict of the ATen judge holds for (`migrate ops --torch`, `migrate run --emulate`).
JUDGED_FOR = (
    "every chip torch_npu supports (its kernel registrations are not per chip; "
    "dtype limits of a chip's kernels are not in the wheel)"
)

# The dispatcher's order for a backend key without its own kernel (computeDispatchTableEntry).
COMPOSITE_KEYS = (
    "CompositeExplicitAutogradNonFunctional",
    "CompositeExplicitAutograd",
    "CompositeImplicitAutograd",
)
COMPOSITE_REASON = (
    "torch_npu has a kernel for this CompositeImplicitAutograd op; the ops it "
    "decomposes into on the CPU are not used on the NPU"
)
NO_KERNEL_REASON = (
    "no kernel in any backend: a tensor metadata query the tensor answers itself (no device runs it)"
)
# Sparse layouts -> torch_npu's name of the dispatch key serving them on the NPU, lowest
# priority first (the dispatcher picks the highest key among the arguments).
SPARSE_KEY_OF = {
    "sparse_coo": "SparseNPU",
    "sparse_csr": "SparseCsrNPU",
    "sparse_csc": "SparseCsrNPU",
    "sparse_bsr": "SparseCsrNPU",
    "sparse_bsc": "SparseCsrNPU",
}
SPARSE_KEY_ORDER = ("SparseNPU", "SparseCsrNPU")
SPARSE_DISPATCH_KEY = {"SparseNPU": "SparsePrivateUse1", "SparseCsrNPU": "SparseCsrPrivateUse1"}
SPARSE_LAYOUTS = {"SparseNPU": "sparse_coo", "SparseCsrNPU": "sparse_csr/csc/bsr/bsc"}
FUSED_BACKWARD_REASON = (
    "torch_npu has a kernel for this CompositeImplicitAutograd op, which owns "
    "its backward: the backward ops of the CPU's decomposition are not used "
    "on the NPU"
)


@cache
def structured_delegates() -> dict[str, str]:
    """functional overload -> its structured ``.out`` overload, from torchgen's packaged yaml."""
    from pathlib import Path

    import torchgen

    from migrate.ops.registry import load_yaml

    path = Path(torchgen.__file__).parent / "packaged/ATen/native/native_functions.yaml"
    if not path.is_file():
        return {}
    out = {}
    for entry in load_yaml(path) or []:
        if "structured_delegate" in entry:
            out[entry["func"].split("(", 1)[0]] = entry["structured_delegate"]
    return out


def has_key(name: str, key: str) -> bool:
    import torch

    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key(name, key)
    except RuntimeError:
        return False


def has_any_kernel(name: str) -> bool:
    import torch

    try:
        return torch._C._dispatch_has_kernel(name)
    except RuntimeError:
        return True  # unknown to the dispatcher: judged by the registry


def namespace(name: str) -> str:
    return name.split("::", 1)[0] if "::" in name else "aten"


def serving_composite(name: str) -> str | None:
    """The composite dispatch key whose kernel serves PrivateUse1 for ``name`` when torch_npu
    has none, or None (then torch_npu's CPU fallback runs it)."""
    return next((k for k in COMPOSITE_KEYS if has_key(name, k)), None)


class Judge:
    """Verdicts for ATen overloads against one registry version (cached per overload)."""

    def __init__(self, target: str | None):
        self.reg: AtenRegistry = load_aten(target)
        self.cache: dict[str, Verdict] = {}
        self.composites: dict[str, list] = {}
        self.descend: dict[str, str] = {}  # overload -> composite key to re-run it at
        self.aliases: dict[str, str] = {}

    def alias(self, name: str) -> str:
        """The name to report: a CPU backend kernel is reported as its composite parent."""
        return self.aliases.get(name, name)

    def direct(self, name: str) -> Verdict | None:
        """A verdict that needs no descent, or None when ``self.descend[name]`` says at which
        composite key to re-run the op to judge what it calls."""
        if namespace(name) not in ("aten", "npu"):
            return self._library_op(name)
        if self.reg.has_kernel(name):
            return self.reg.lookup(name)
        key = aten_name(name)
        parent = self.reg.cpu_backend.get(key.split(".", 1)[0])
        if parent and self.reg.has_kernel(parent["parent"]):
            self.aliases[name] = f"aten::{parent['parent']}"
            return Verdict(SUPPORTED, f"{COMPOSITE_REASON} (CPU used {name}: {parent['why']})")
        out = structured_delegates().get(key)
        if out and self.reg.has_kernel(out):
            return Verdict(SUPPORTED, f"structured op: NPU kernel for aten::{out}")
        return self._without_npu_kernel(name, self.reg.lookup)

    def _without_npu_kernel(self, name: str, fallback) -> Verdict | None:
        """No NPU kernel: a composite kernel serves the NPU (None: descend into it), or no
        backend has a kernel (a metadata query), or ``fallback(name)`` says what happens."""
        composite = serving_composite(name)
        if composite is not None:
            self.descend[name] = composite
            return None
        if not has_any_kernel(name):
            return Verdict(SUPPORTED, NO_KERNEL_REASON)
        return fallback(name)

    def _library_op(self, name: str) -> Verdict | None:
        """An op of another library (``torchvision::nms``, a ``torch.library`` op): the same
        dispatcher rules, with the kernels registered in this process standing for the NPU's
        (torch_npu brings none for them)."""
        if has_key(name, "PrivateUse1"):
            return Verdict(SUPPORTED, "an NPU (PrivateUse1) kernel is registered for it")
        pkg = f"torch_npu {self.reg.version.split('-', 1)[-1]}"
        return self._without_npu_kernel(
            name,
            lambda op: Verdict(
                CPU_FALLBACK,
                f"no NPU kernel: {namespace(op)} registers CPU/CUDA kernels only and "
                f"{pkg} brings none; runs on the CPU through torch_npu's fallback (an "
                "error with TORCH_NPU_FALLBACK_CPU_DISABLE=1)",
            ),
        )

    def sparse_key(self, tensors, kwargs: dict | None = None) -> str | None:
        """torch_npu's sparse key the dispatcher picks for these tensors (SparseNPU for COO,
        SparseCsrNPU for compressed layouts, which outrank it), or None: all dense. A factory's
        TensorOptions (``layout`` given with ``device``) count as the tensors do."""
        import torch

        layouts = [t.layout for t in tensors if isinstance(t, torch.Tensor)]
        if kwargs and isinstance(kwargs.get("layout"), torch.layout) and "device" in kwargs:
            layouts.append(kwargs["layout"])
        keys = {SPARSE_KEY_OF.get(str(lay).removeprefix("torch.")) for lay in layouts if lay != torch.strided}
        keys.discard(None)
        return max(keys, key=SPARSE_KEY_ORDER.index) if keys else None

    def sparse(self, name: str, key: str) -> Verdict | None:
        """The verdict of ``name`` called on sparse tensors (torch_npu's ``key``): its kernel
        there; else the composite serving that key (None: descend, ``self.descend[key:name]``;
        CompositeExplicitAutogradNonFunctional serves compressed layouts only); else a
        metadata query; else unsupported (torch_npu's CPU fallback is for dense tensors)."""
        pkg = f"torch_npu {self.reg.version.split('-', 1)[-1]}"
        if self.reg.has_sparse_kernel(name, key):
            return Verdict(SUPPORTED, f"{key} kernel in {pkg} ({SPARSE_LAYOUTS[key]} tensors)")
        composites = COMPOSITE_KEYS if key == "SparseCsrNPU" else COMPOSITE_KEYS[1:]
        composite = next((k for k in composites if has_key(name, k)), None)
        if composite is not None:
            self.descend[f"{key}:{name}"] = composite
            return None
        if not has_any_kernel(name):
            return Verdict(SUPPORTED, NO_KERNEL_REASON)
        dense = (
            "use dense tensors there (to_dense(): its _to_dense has a kernel)"
            if self.reg.has_sparse_kernel("aten::_to_dense", key)
            else "use dense tensors there"
        )
        return Verdict(
            UNSUPPORTED,
            f"{SPARSE_LAYOUTS[key]} tensor: {pkg} registers no {key} kernel for {name} "
            f"(dispatch key {SPARSE_DISPATCH_KEY[key]}) and its CPU fallback serves dense "
            f"tensors only: fails on the NPU; {dense}",
        )

    def composite(self, fname: str, args=(), kwargs=None) -> str | None:
        """aten overload of a CompositeImplicitAutograd op named ``fname`` with an NPU kernel
        that this call's arguments fit (``torch.where(c)`` is the composite ``where``;
        ``torch.where(c, x, y)`` is ``where.self``, an op of its own)."""
        found = self.composites.get(fname)
        if found is None:
            found = self.composites[fname] = self._composites(fname)
        if not found:
            return None
        # On sparse tensors an NPU kernel serves only if it is one for their sparse key; else
        # the op decomposes there, and what it calls is judged at that key.
        key = self.sparse_key(_flat(args, kwargs or {}))
        for full, schema in found:
            if (schema is None or _fits(schema, args, kwargs or {})) and (
                key is None or self.reg.has_sparse_kernel(full, key)
            ):
                return full
        return None

    def _composites(self, fname: str) -> list:
        import torch

        found = []
        packet = getattr(torch.ops.aten, fname, None) if fname.isidentifier() else None
        if packet is not None and hasattr(packet, "overloads"):
            for ov in packet.overloads():
                full = f"aten::{fname}" if ov == "default" else f"aten::{fname}.{ov}"
                if has_key(full, "CompositeImplicitAutograd") and self.reg.has_kernel(full):
                    found.append((full, getattr(getattr(packet, ov), "_schema", None)))
        return found


def _flat(args, kwargs: dict) -> list:
    """The arguments, with those in lists (TensorList arguments) at top level."""
    out: list = []
    for a in (*args, *kwargs.values()):
        out.extend(a if isinstance(a, (list, tuple)) else (a,))
    return out


def _fits(schema, args, kwargs: dict) -> bool:
    """Can ``args``/``kwargs`` bind to ``schema`` (count and names, not types)?"""
    params = schema.arguments
    if len(args) > len(params):
        return False
    names = {p.name for p in params}
    if any(k not in names for k in kwargs):
        return False
    return all(i < len(args) or p.name in kwargs or p.has_default_value() for i, p in enumerate(params))


def from_children(name: str, key: str, children: list[tuple[str, Verdict]]) -> Verdict:
    """The verdict of a composite op from the verdicts of what its kernel called."""
    bad = [(op, v) for op, v in children if v.status != SUPPORTED]
    short = key.replace("CompositeExplicitAutograd", "CEA").replace("CompositeImplicitAutograd", "CIA")
    if bad:
        op, v = bad[0]
        return Verdict(v.status, f"runs torch's {short} kernel on the NPU, which calls {op}: {v.reason}")
    called = sorted({op for op, _ in children})
    shown = ", ".join(called[:4]) + (" ..." if len(called) > 4 else "")
    return Verdict(
        SUPPORTED,
        f"backend-agnostic composite: torch's {short} kernel serves the "
        f"NPU and calls only supported ops ({shown or 'no ops: a view'})",
    )
