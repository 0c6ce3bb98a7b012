"""The fake ``torch_npu`` package: every public module and name of the torch_npu wheel
(data.surface(), from the op registry), with the emulated ones working and the others
raising "not emulated: NAME (called at FILE:LINE)".

An import hook (a ``sys.meta_path`` finder) answers ``import torch_npu`` and its submodules
only while the emulation is active; nothing is written to disk.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

from migrate.emulate.callsite import not_emulated

ROOT = "torch_npu"


class Missing:
    """A torch_npu name the emulation does not implement: importable, fails when used."""

    def __init__(self, qualname: str):
        object.__setattr__(self, "_qualname", qualname)

    def __call__(self, *args, **kwargs):
        raise not_emulated(self._qualname)

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise not_emulated(f"{self._qualname}.{attr}")

    def __repr__(self) -> str:
        return f"<not emulated: {self._qualname}>"


def implementations() -> dict[str, object]:
    """Qualified name -> the emulated object, for everything besides torch.npu."""
    import torch

    from migrate.emulate import fused, hccl, optim, profiler, transfer

    found: dict[str, object] = {f"{ROOT}.npu": torch.npu}
    for name, impl in fused.FUSED.items():
        found[f"{ROOT}.{name}"] = impl
    for name, cls in optim.OPTIMIZERS.items():
        found[f"{ROOT}.optim.{name}"] = cls
    for name, obj in profiler.EXPORTS.items():
        found[f"{ROOT}.profiler.{name}"] = obj
    found[f"{ROOT}.contrib.transfer_to_npu"] = transfer.module()
    found[f"{ROOT}.utils.profiler.Profile"] = profiler.Profile
    for mod in ("distributed", "distributed.distributed_c10d"):
        found[f"{ROOT}.{mod}.is_hccl_available"] = hccl.is_hccl_available
    return found


def _children(modules) -> dict[str, set[str]]:
    kids: dict[str, set[str]] = {}
    for mod in modules:
        parent, _, leaf = mod.rpartition(".")
        if parent:
            kids.setdefault(parent, set()).add(leaf)
    return kids


def build_tree() -> dict[str, types.ModuleType]:
    """Module objects for every public torch_npu module, filled from the surface data."""
    import torch

    from migrate.emulate.data import surface

    surf = surface()
    impl = implementations()
    modules: dict[str, types.ModuleType] = {}
    names = set(surf.modules) | {m.rpartition(".")[0] for m in impl if "." in m}
    names = {n for n in names if n == ROOT or n.startswith(ROOT + ".")}
    for mod in sorted(names, key=lambda m: m.count(".")):
        obj = impl.get(mod)
        if not isinstance(obj, types.ModuleType):
            obj = _existing_submodule(modules, mod) or types.ModuleType(mod)
        obj.__path__ = []  # every emulated module may have submodules
        obj.__emulated__ = True  # type: ignore[union-attr]
        modules[mod] = obj
    kids = _children(modules)
    for mod, obj in modules.items():
        for leaf in sorted(surf.names(mod) | kids.get(mod, set())):
            qual = f"{mod}.{leaf}"
            if qual in modules and getattr(modules[qual], "__on_import__", None) is not None:
                continue  # `from torch_npu.contrib import transfer_to_npu` must import it: its hook runs
            if qual in modules:
                setattr(obj, leaf, modules[qual])
            elif qual in impl:
                setattr(obj, leaf, impl[qual])
            elif not hasattr(obj, leaf):
                setattr(obj, leaf, Missing(qual))
    for qual, value in impl.items():
        parent, _, leaf = qual.rpartition(".")
        if parent in modules and not isinstance(value, types.ModuleType):
            setattr(modules[parent], leaf, value)
    modules[ROOT].__version__ = f"{surf.version}+emulated"
    modules[ROOT].npu = torch.npu
    return modules


def _existing_submodule(modules: dict, qual: str):
    """torch.npu's own submodules (amp, memory, ...) stand for torch_npu.npu.<name>."""
    parent, _, leaf = qual.rpartition(".")
    holder = modules.get(parent)
    found = getattr(holder, leaf, None) if holder is not None else None
    return found if isinstance(found, types.ModuleType) else None


class TreeLoader(importlib.abc.Loader):
    """Loads a module built in memory as it is; runs its ``__on_import__`` hook, if any."""

    def __init__(self, module: types.ModuleType):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module) -> None:
        hook = getattr(module, "__on_import__", None)
        if hook is not None:
            hook()


def tree_spec(fullname: str, module: types.ModuleType) -> importlib.machinery.ModuleSpec:
    """The import spec of a module built in memory (a package, so submodules resolve)."""
    return importlib.machinery.ModuleSpec(fullname, TreeLoader(module), is_package=True)


class Finder(importlib.abc.MetaPathFinder):
    def __init__(self, tree: dict[str, types.ModuleType]):
        self.tree = tree

    def find_spec(self, fullname, path=None, target=None):
        module = self.tree.get(fullname)
        if module is None:
            return None
        return tree_spec(fullname, module)


def install_finder() -> Finder:
    for finder in sys.meta_path:
        if isinstance(finder, Finder):
            return finder
    for name in [n for n in sys.modules if n == ROOT or n.startswith(ROOT + ".")]:
        del sys.modules[name]  # a real or earlier torch_npu must not shadow the emulation
    finder = Finder(build_tree())
    sys.meta_path.insert(0, finder)
    return finder
