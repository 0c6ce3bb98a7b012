"""Units a model is lowered by, one at a time, and the context that lowers a set of them.

* ``module``: every leaf module with parameters (Linear, Conv, Embedding, norms ...),
  named by its path;
* ``type``: every such module of one class together (``Linear``), named by the class;
* ``op``: one torch function kind wherever the model calls it (``linear``, ``matmul``,
  ``softmax``, ``layer_norm``, ``scaled_dot_product_attention`` ...), named ``op:<kind>``:
  functional code between modules, fused ops included.

Lowering a module rounds its floating inputs, its own parameters (swapped for rounded
copies while the model runs, restored after) and its outputs as the Format says; lowering
an op kind does the same to the function's tensor arguments and result.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from migrate.precision.api_hooks import SKIP
from migrate.precision.flatten import iter_tensors, substitute
from migrate.precision.sensitivity.formats import Format

UNIT_KINDS = ("module", "type", "op")


@dataclass
class Unit:
    name: str  # module path, class name, or "op:<kind>"
    kind: str
    modules: list[str] = field(default_factory=list)  # module paths it lowers
    params: int = 0  # parameters it covers


def leaf_modules(model: Any) -> list[tuple[str, Any]]:
    return [
        (n, m)
        for n, m in model.named_modules()
        if n and not list(m.children()) and any(True for _ in m.parameters(recurse=False))
    ]


def module_units(model: Any, kind: str, ops: list[str] | None = None) -> list[Unit]:
    leaves = leaf_modules(model)
    if kind == "module":
        return [Unit(n, "module", [n], _count(m)) for n, m in leaves]
    if kind == "type":
        by_type: dict[str, Unit] = {}
        for n, m in leaves:
            unit = by_type.setdefault(type(m).__name__, Unit(type(m).__name__, "type"))
            unit.modules.append(n)
            unit.params += _count(m)
        return list(by_type.values())
    return [Unit(f"op:{op}", "op") for op in ops or []]


def modules_called(model: Any, batch: tuple[tuple, dict]) -> set[str]:
    """The module paths one forward of ``batch`` calls."""
    import torch

    names = {id(m): n for n, m in model.named_modules() if n}
    seen: set[str] = set()

    def hook(module, args):
        if id(module) in names:
            seen.add(names[id(module)])

    handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
    try:
        with torch.no_grad():
            args, kwargs = batch
            model(*args, **kwargs)
    finally:
        handle.remove()
    return seen


def _count(module: Any) -> int:
    return sum(p.numel() for p in module.parameters(recurse=False))


def op_name(func: Any) -> str:
    return getattr(func, "__name__", None) or type(func).__name__


def _round(obj: Any, fn: Any) -> Any:
    tensors = [fn(t) if t.is_floating_point() else t for _, t in iter_tensors(obj)]
    return substitute(obj, iter(tensors)) if tensors else obj


@contextmanager
def lowered(model: Any, units: list[Unit], fmt: Format):
    """Run ``model`` with ``units`` lowered to ``fmt`` inside the block."""
    import torch

    names = {n for u in units for n in u.modules}
    ops = {u.name[3:] for u in units if u.kind == "op"}
    with ExitStack() as stack, torch.no_grad():
        for name in names:
            stack.enter_context(_lowered_module(model.get_submodule(name), fmt))
        if ops:
            stack.enter_context(_OpMode(ops, fmt))
        yield


@contextmanager
def _lowered_module(module: Any, fmt: Format):
    saved = {}
    for pname, p in module.named_parameters(recurse=False):
        saved[pname] = p.data
        p.data = fmt.param(p.data)
    pre = module.register_forward_pre_hook(
        lambda m, a, k: (_round(a, fmt.inputs), _round(k, fmt.inputs)), with_kwargs=True
    )
    post = module.register_forward_hook(lambda m, a, o: _round(o, fmt.outputs))
    try:
        yield
    finally:
        pre.remove()
        post.remove()
        for pname, p in module.named_parameters(recurse=False):
            p.data = saved[pname]


class _OpMode:
    """Lower every call of the given function kinds (a TorchFunctionMode)."""

    def __init__(self, ops: set[str], fmt: Format) -> None:
        import torch

        outer = self

        class Mode(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if op_name(func) in outer.ops:
                    args, kwargs = _round(args, fmt.inputs), _round(kwargs, fmt.inputs)
                    return _round(func(*args, **kwargs), fmt.outputs)
                return func(*args, **kwargs)

        self.ops, self._mode = ops, Mode()

    def __enter__(self):
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        self._mode.__exit__(*exc)


class OpCensus:
    """The numerical torch function kinds a forward calls (for ``--unit op``)."""

    def __init__(self) -> None:
        import torch

        found: dict[str, int] = {}

        class Mode(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                name = op_name(func)
                if (
                    name not in SKIP
                    and not name.startswith("_")
                    and any(t.is_floating_point() for _, t in iter_tensors(out))
                ):
                    found[name] = found.get(name, 0) + 1
                return out

        self.found, self.mode = found, Mode()
