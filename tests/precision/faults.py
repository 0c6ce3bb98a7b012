"""Faults a port can introduce, injected into any model without knowing its code: a weight,
a kernel (a module's output), the module's own code between its children (a functional
call's output scaled), and the backward (a module's input gradient or a weight gradient
scaled). Used by the sweep benchmark and the tests."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

import torch

from migrate.precision.api_hooks import SKIP


def layers(model, kinds=(torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d)) -> list[str]:
    return [
        n
        for n, m in model.named_modules()
        if isinstance(m, kinds) and getattr(m, "weight", None) is not None and m.weight.dim() >= 2
    ]


def weight_site(model) -> str:
    names = layers(model)
    return names[len(names) // 2]


def running_layers(model, args: tuple, kwargs: dict) -> list[str]:
    """The layers (``layers``) that one forward calls as modules, in call order. A layer
    whose weight its parent's code uses directly (Mamba's ``conv1d`` and ``dt_proj`` in
    transformers 5) never runs as a module: hooks on it never fire."""
    ran: list[str] = []
    handles = [
        model.get_submodule(n).register_forward_hook(lambda m, a, o, n=n: ran.append(n))
        for n in layers(model)
    ]
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return list(dict.fromkeys(ran))


def backward_site(model, args: tuple, kwargs: dict) -> str | None:
    """The middle layer among those that run as modules: where a wrong backward (a module
    backward hook, ``scale_grad_input``) can be injected at all."""
    names = running_layers(model, args, kwargs)
    return names[len(names) // 2] if names else None


def perturb_weight(model, site: str, scale: float = 0.5, rows: int = 4) -> None:
    with torch.no_grad():
        model.get_submodule(site).weight[:rows] *= 1.0 + scale


def own_code_site(model) -> str | None:
    """A middle module with children and code of its own (attention, MLP, mixer, block)."""
    words = ("Attention", "Mixer", "MLP", "Mlp", "Intermediate", "FeedForward", "Block", "Layer", "Stage")
    names = [
        n
        for n, m in model.named_modules()
        if n and len(list(m.children())) >= 2 and type(m).__name__.endswith(words)
    ]
    return names[len(names) // 2] if names else None


def _from_tool() -> bool:
    """A call made by the precision tool's own hooks (not by the model). The tool's own
    TorchFunctionModes pass the model's calls on: their frames do not count."""
    frame = sys._getframe(2)
    for _ in range(12):
        if frame is None:
            return False
        if (
            f"{os.sep}migrate{os.sep}precision{os.sep}" in frame.f_code.co_filename
            and frame.f_code.co_name != "__torch_function__"
        ):
            return True
        frame = frame.f_back
    return False


class _OwnCodeFault(torch.overrides.TorchFunctionMode):
    """Scale the output of the ``nth`` numerical torch call made by ``site``'s own code
    (not inside its children)."""

    def __init__(self, model, site: str, scale: float, nth: int) -> None:
        super().__init__()
        self.site, self.scale, self.nth, self.seen, self.stack = site, scale, nth, 0, []
        self.hit = False
        self.handles = []
        for name, mod in model.named_modules():
            self.handles.append(
                mod.register_forward_pre_hook(lambda m, a, n=name: self.stack.append(n) and None)
            )
            self.handles.append(mod.register_forward_hook(self._leave))

    def _leave(self, module, args, output) -> None:
        if self.stack:
            self.stack.pop()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if (
            not _from_tool()
            and self.stack
            and self.stack[-1] == self.site
            and not self.hit
            and name not in SKIP
            and not name.startswith("_")
            and isinstance(out, torch.Tensor)
            and out.is_floating_point()
            and out.numel() > 1
        ):
            if self.seen == self.nth:
                self.hit = True
                return out * self.scale
            self.seen += 1
        return out

    def close(self) -> None:
        for h in self.handles:
            h.remove()


@contextmanager
def own_code_fault(model, site: str, scale: float = 1.25, nth: int = 1):
    """Every forward inside the block runs with the fault (reset per forward)."""
    mode = _OwnCodeFault(model, site, scale, nth)
    reset = model.register_forward_pre_hook(
        lambda m, a: setattr(mode, "hit", False) or setattr(mode, "seen", 0)
    )
    try:
        with mode:
            yield mode
    finally:
        reset.remove()
        mode.close()


def scale_grad_input(model, site: str, scale: float = 1.25):
    """A wrong backward: every gradient flowing into ``site``'s inputs scaled."""
    mod = model.get_submodule(site)
    return mod.register_full_backward_hook(
        lambda m, gi, go: tuple(None if g is None else g * scale for g in gi)
    )


def scale_weight_grad(model, site: str, scale: float = 0.5):
    """A wrong weight gradient (a custom kernel's backward): ``site.weight``'s gradient."""
    return model.get_submodule(site).weight.register_hook(lambda g: g * scale)


EPS_ATTRS = ("eps", "variance_epsilon", "epsilon")


def norm_sites(model) -> list[str]:
    """Normalisation modules with an epsilon of their own (LayerNorm, RMSNorm, T5's
    LayerNorm, GroupNorm), in definition order."""
    return [
        n
        for n, m in model.named_modules()
        if n
        and "norm" in type(m).__name__.lower()
        and any(isinstance(getattr(m, a, None), float) for a in EPS_ATTRS)
    ]


def norm_site(model) -> str | None:
    names = norm_sites(model)
    return names[len(names) // 2] if names else None


def wrong_eps(model, site: str, eps: float = 0.1) -> None:
    """A wrong epsilon at a norm (1e-12 or 1e-6 ported as ``eps``): one of the commonest
    porting bugs; it rescales every row by about 1/sqrt(1 + eps / var)."""
    mod = model.get_submodule(site)
    attr = next(a for a in EPS_ATTRS if isinstance(getattr(mod, a, None), float))
    setattr(mod, attr, eps)
