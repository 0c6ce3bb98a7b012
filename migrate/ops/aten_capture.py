"""ATen op census of a PyTorch model: run it once under dispatch-level capture.

Three layers, so that ops torch_npu runs itself are not misreported:

* A TorchFunctionMode sees calls *before* CompositeImplicitAutograd decomposition
  (``torch.matmul``, ``F.scaled_dot_product_attention``, ``_VF.lstm``). When torch_npu has
  a kernel for that composite op, the op is reported and the ops it decomposes into on the
  CPU are not.
* A TorchDispatchMode sees every ATen overload that reaches a kernel, with the module path
  (forward hooks) that dispatched it.
* An overload without an NPU kernel is resolved before it is called a CPU fallback:
  CompositeExplicitAutograd ops (views, factories) are re-run at that key under a nested
  capture, so what they call is judged; structured functional ops are judged by their
  ``.out`` overload; CPU backend kernels of a composite (SDPA's CPU flash kernel) are
  reported under the composite.
"""

from __future__ import annotations

from functools import cache

from migrate.ops.registry import CPU_FALLBACK, SUPPORTED, Verdict, aten_name, load_aten


@cache
def structured_delegates() -> dict[str, str]:
    """functional overload -> its structured ``.out`` overload, from torchgen's packaged yaml."""
    from pathlib import Path

    import torchgen
    import yaml

    path = Path(torchgen.__file__).parent / "packaged/ATen/native/native_functions.yaml"
    if not path.is_file():
        return {}
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out = {}
    for entry in yaml.load(path.read_text(encoding="utf-8"), Loader=loader):
        if "structured_delegate" in entry:
            name = entry["func"].split("(", 1)[0]
            out[name] = entry["structured_delegate"]
    return out


def _has_key(name: str, key: str) -> bool:
    import torch

    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key(name, key)
    except RuntimeError:
        return False


class Judge:
    """Verdicts for ATen overloads against one registry version (cached per overload)."""

    def __init__(self, target: str | None):
        self.reg = load_aten(target)
        self.cache: dict[str, Verdict] = {}
        self.composites: dict[str, str | None] = {}
        self.descend: dict[str, str] = {}  # overload -> composite key to re-run it at
        self.aliases: dict[str, str] = {}

    def alias(self, name: str) -> str:
        """The name to report: a CPU backend kernel is reported as its composite parent."""
        return self.aliases.get(name, name)

    def direct(self, name: str) -> Verdict | None:
        """A verdict that needs no descent, or None for a CompositeExplicitAutograd op."""
        if self.reg.has_kernel(name):
            return self.reg.lookup(name)
        key = aten_name(name)
        base = key.split(".", 1)[0]
        parent = self.reg.cpu_backend.get(base)
        if parent and self.reg.has_kernel(parent["parent"]):
            self.aliases[name] = f"aten::{parent['parent']}"
            return Verdict(SUPPORTED, f"{_COMPOSITE_REASON} (CPU used {name}: {parent['why']})")
        out = structured_delegates().get(key)
        if out and self.reg.has_kernel(out):
            return Verdict(SUPPORTED, f"structured op: NPU kernel for aten::{out}")
        for key in ("CompositeExplicitAutograd", "CompositeImplicitAutograd"):
            if _has_key(name, key):
                self.descend[name] = key
                return None
        return self.reg.lookup(name)

    def composite(self, fname: str) -> str | None:
        """aten overload of a CompositeImplicitAutograd op named ``fname`` with an NPU kernel."""
        if fname in self.composites:
            return self.composites[fname]
        import torch

        found = None
        packet = getattr(torch.ops.aten, fname, None) if fname.isidentifier() else None
        if packet is not None and hasattr(packet, "overloads"):
            for ov in packet.overloads():
                full = f"aten::{fname}" if ov == "default" else f"aten::{fname}.{ov}"
                if _has_key(full, "CompositeImplicitAutograd") and self.reg.has_kernel(full):
                    found = full
                    break
        self.composites[fname] = found
        return found


class Census:
    """Rows keyed by (op, status); module paths in first-seen order."""

    def __init__(self):
        self.rows: dict[tuple[str, str], dict] = {}
        self.stack: list[str] = []
        self.suppress = 0

    @property
    def where(self) -> str:
        return self.stack[-1] if self.stack else "<root>"

    def add(self, op: str, verdict: Verdict, dtype: str | None, note: str | None = None) -> None:
        key = (op, verdict.status)
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = {"op": op, "domain": "aten", "count": 0, "nodes": [],
                                    "status": verdict.status, "reason": verdict.reason,
                                    "decomposition": None, "dtypes": []}
        row["count"] += 1
        if self.where not in row["nodes"]:
            row["nodes"].append(self.where)
        if dtype and dtype not in row["dtypes"]:
            row["dtypes"].append(dtype)
        if note and note not in row.setdefault("notes", []):
            row["notes"].append(note)


def _dtype(args) -> str | None:
    import torch

    for a in args:
        if isinstance(a, torch.Tensor):
            return str(a.dtype).replace("torch.", "")
        if isinstance(a, (list, tuple)):
            found = _dtype(a)
            if found:
                return found
    return None


def _fname(func, forwards: dict[str, str]) -> str:
    """The ATen name a torch-function call stands for: C-implemented functions and methods
    by name; Python-level ones only when listed as direct forwards (notes.yaml)."""
    import types

    name = getattr(func, "__name__", "") or ""
    if isinstance(func, types.FunctionType):
        return forwards.get(name, "")
    return name


_COMPOSITE_REASON = ("torch_npu has a kernel for this CompositeImplicitAutograd op; the ops it "
                     "decomposes into on the CPU are not used on the NPU")


def _modes(census: Census, judge: Judge):
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    forwards = judge.reg.python_forwards
    keys = {k: getattr(torch._C.DispatchKey, k) for k in (
        "CompositeExplicitAutograd", "CompositeImplicitAutograd")}

    class FunctionMode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            op = None if census.suppress else judge.composite(_fname(func, forwards))
            if op is None:
                return func(*args, **kwargs)
            census.add(op, Verdict(SUPPORTED, _COMPOSITE_REASON), _dtype(args))
            census.suppress += 1
            try:
                return func(*args, **kwargs)
            finally:
                census.suppress -= 1

    class DispatchMode(TorchDispatchMode):
        def __init__(self, seen: list | None = None):
            super().__init__()
            self.seen = seen

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if census.suppress:
                return func(*args, **kwargs)
            name = func.name()
            verdict = judge.cache.get(name)
            if verdict is None and name not in judge.descend:
                verdict = judge.direct(name)
                if verdict is not None:
                    judge.cache[name] = verdict
            if name in judge.descend:
                children: list[Verdict] = []
                try:
                    with DispatchMode(children):
                        out = func._op_dk(keys[judge.descend[name]], *args, **kwargs)
                except (RuntimeError, NotImplementedError):
                    if children:  # part of it ran: do not run it twice
                        raise
                    out = func(*args, **kwargs)
                verdict = _from_children(children)
            else:
                out = func(*args, **kwargs)
            dtype = _dtype(args)
            census.add(judge.alias(name), verdict, dtype, judge.reg.weak_dtypes.get(dtype))
            if self.seen is not None:
                self.seen.append(verdict)
            return out

    return FunctionMode, DispatchMode


def _from_children(children: list[Verdict]) -> Verdict:
    bad = [v for v in children if v.status != SUPPORTED]
    if bad:
        return Verdict(bad[0].status, "composite op; something it calls has "
                                      f"no NPU kernel ({bad[0].reason})")
    return Verdict(SUPPORTED, "backend-agnostic composite: runs on the NPU through what it "
                              "calls (all judged supported)")


def _hooks(model, census: Census) -> list:
    handles = []
    for name, module in model.named_modules():
        path = name or "<root>"

        def pre(_m, _a, path=path):
            census.stack.append(path)

        def post(_m, _a, _o):
            if census.stack:
                census.stack.pop()

        handles.append(module.register_forward_pre_hook(pre))
        handles.append(module.register_forward_hook(post))
    return handles


def capture(model, args, kwargs, target: str | None = None) -> tuple[Census, Judge]:
    """Run ``model(*args, **kwargs)`` once under capture; the model's errors propagate."""
    import torch

    judge, census = Judge(target), Census()
    function_mode, dispatch_mode = _modes(census, judge)
    handles = _hooks(model, census) if hasattr(model, "named_modules") else []
    try:
        with torch.no_grad(), function_mode(), dispatch_mode():
            model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return census, judge


def aten_census(spec: str, target: str | None = None, device: str = "cpu",
                dtype: str | None = None) -> dict:
    """The op coverage report (docs/contracts.md §4) of the model that ``spec`` (MOD:FN) builds."""
    from migrate.core.errors import UsageError
    from migrate.ops.model_spec import load_spec, move

    load_aten(target)  # a bad --target is reported before any user code runs
    model, args, kwargs = move(*load_spec(spec), device=device, dtype=dtype)
    try:
        census, judge = capture(model, args, kwargs, target)
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's model failed: bad input
        raise UsageError(f"--torch {spec}: the model raised {type(exc).__name__}: "
                         f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
                         ) from None
    ops = sorted(census.rows.values(), key=lambda r: (r["status"] == SUPPORTED, r["op"]))
    summary = {s: 0 for s in ("supported", "unsupported", "restricted", "cpu-fallback")}
    for row in ops:
        summary[row["status"]] += 1
    advice = []
    if summary[CPU_FALLBACK]:
        advice.append("ops without an NPU kernel run on the CPU with a one-time warning; set "
                      "TORCH_NPU_FALLBACK_CPU_DISABLE=1 to make them errors")
    return {"model": spec, "target": judge.reg.version, "device": device, "dtype": dtype,
            "ops": ops, "summary": {**summary, "ops": len(ops),
                                    "calls": sum(r["count"] for r in ops)},
            "advice": advice}
