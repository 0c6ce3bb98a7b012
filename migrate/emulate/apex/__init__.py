"""A stand-in for Ascend's apex (its fork of NVIDIA apex) inside an emulated run, for the
ModelZoo scripts that do mixed precision through it: ``apex``, ``apex.amp`` (amp.py),
``apex.optimizers`` (``NpuFusedSGD``, ``NpuFusedAdam``, ``NpuFusedAdamW``, ``NpuFusedLamb``:
migrate/emulate/optim.py's torch optimizers with the same arguments; fused is a speed
detail) and ``apex.parallel`` (parallel.py).

The import hook is put at the end of ``sys.meta_path``, after the finders of ``sys.path``:
a real apex that can be imported (installed, or a folder of the program's) is always the
one imported; the stand-in only answers when nothing else does. Any other name of these
modules is missing (an AttributeError saying ``not emulated: apex.NAME``).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

from migrate.emulate.surface import tree_spec

ROOT = "apex"


class NotEmulatedName(AttributeError):
    """A name of apex the stand-in lacks: an AttributeError (``hasattr`` answers False,
    ``from apex.optimizers import X`` fails with ImportError) whose message says so."""


def _module(name: str, doc: str | None, names: dict) -> types.ModuleType:
    from migrate.emulate.callsite import not_emulated

    mod = types.ModuleType(name, doc)
    mod.__dict__.update(names)
    mod.__emulated__ = True

    def __getattr__(attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise NotEmulatedName(str(not_emulated(f"{name}.{attr}")).replace("torch_npu API", "apex API"))

    mod.__getattr__ = __getattr__
    return mod


def build() -> dict[str, types.ModuleType]:
    from migrate.emulate import optim
    from migrate.emulate.apex import amp, parallel

    tree = {
        f"{ROOT}.amp": _module(f"{ROOT}.amp", amp.__doc__, {n: getattr(amp, n) for n in amp.__all__}),
        f"{ROOT}.optimizers": _module(f"{ROOT}.optimizers", optim.__doc__, dict(optim.OPTIMIZERS)),
        f"{ROOT}.parallel": _module(
            f"{ROOT}.parallel", parallel.__doc__, {n: getattr(parallel, n) for n in parallel.__all__}
        ),
    }
    top: dict[str, object] = {"__version__": "0.1+emulated"}
    top.update({name.rpartition(".")[2]: mod for name, mod in tree.items()})
    tree[ROOT] = _module(ROOT, __doc__, top)
    tree[ROOT].__on_import__ = _announce  # surface.TreeLoader runs it
    return tree


def _announce() -> None:
    from migrate.emulate.monitor import record_note

    record_note("apex: not installed; the emulation's stand-in ran (docs/emulate.md, Ascend's apex)")


class Finder(importlib.abc.MetaPathFinder):
    """Answers ``apex`` and its emulated submodules when no earlier finder did."""

    def __init__(self) -> None:
        self.tree: dict[str, types.ModuleType] | None = None

    def find_spec(self, fullname, path=None, target=None):
        if fullname != ROOT and not fullname.startswith(ROOT + "."):
            return None
        if fullname != ROOT and not getattr(sys.modules.get(ROOT), "__emulated__", False):
            return None  # a submodule a real apex lacks stays missing
        if self.tree is None:
            self.tree = build()
        module = self.tree.get(fullname)
        if module is None:
            return None
        return tree_spec(fullname, module)


def install() -> Finder:
    """Idempotent: the finder, last on sys.meta_path."""
    for finder in sys.meta_path:
        if isinstance(finder, Finder):
            return finder
    finder = Finder()
    sys.meta_path.append(finder)
    return finder
