"""Which public names does torch_npu have? Answered from its wheel, by static parsing.

The wheel (``pip download --no-deps torch-npu==2.14.0``) is fetched once into
``<repo>/.cache/wheels/`` (or taken from ``$MIGRATE_TORCH_NPU_WHEEL``). Nothing is imported
from it: its Python files are parsed with ``ast`` and names are resolved the way the import
system would (module bindings, ``from x import *`` honouring ``__all__``, submodules, class
bodies, ``Cls.attr = ...`` assignments, names a ``__getattr__`` answers). The custom ops that
torch_npu exports as ``torch_npu.<op>`` come from the ``custom`` sections of
``torch_npu/csrc/aten/npu_native_functions*.yaml``, limited to ``public_npu_functions``
(``torch_npu/utils/exposed_api.py``).

``torch.npu`` is ``torch_npu.npu`` at run time, so both spellings are accepted.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from functools import cache
from pathlib import Path

VERSION = "2.14.0"
REPO = Path(__file__).resolve().parents[1]  # the checkout (this file is tools/npu_wheel.py)


def _cache_dir() -> Path:
    """Where downloaded wheels are kept: the checkout's .cache/wheels, else the user's
    cache folder."""
    if (REPO / "pyproject.toml").is_file():
        return REPO / ".cache" / "wheels"
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ascend-migrate" / "wheels"


CACHE = _cache_dir()
_FUNC = re.compile(r"^([A-Za-z0-9_]+)[.(]")


def wheel_path(version: str = VERSION) -> Path:
    """The torch_npu wheel, downloaded into .cache/wheels the first time."""
    env = os.environ.get("MIGRATE_TORCH_NPU_WHEEL")
    if env:
        return Path(env)
    found = sorted(CACHE.glob(f"torch_npu-{version}-*.whl"))
    if not found:
        # Download into a private folder, then move into place: parallel test workers
        # never see a half-written wheel.
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--only-binary=:all:",
                    f"torch-npu=={version}",
                    "-d",
                    tmp,
                ],
                check=True,
                capture_output=True,
            )
            for wheel in Path(tmp).glob("torch_npu-*.whl"):
                os.replace(wheel, CACHE / wheel.name)
        found = sorted(CACHE.glob(f"torch_npu-{version}-*.whl"))
    if not found:
        raise FileNotFoundError(f"no torch_npu {version} wheel in {CACHE}")
    return found[0]


# Resolved objects are tuples: ("mod", name) | ("cls", module, ClassDef) |
# ("inst", module, ClassDef) | ("leaf",) for functions/values | None for unknown.
class NpuWheel:
    def __init__(self, path: Path):
        self.path = path
        self.sources: dict[str, str] = {}
        self.packages: set[str] = set()
        texts: dict[str, str] = {}
        with zipfile.ZipFile(path) as zf:
            for name in zf.namelist():
                if name.startswith("torch_npu/") and name.endswith(".py"):
                    mod = name[:-3].replace("/", ".")
                    if mod.endswith(".__init__"):
                        mod = mod[: -len(".__init__")]
                        self.packages.add(mod)
                    self.sources[mod] = zf.read(name).decode("utf-8-sig", "replace")
                elif re.match(r"torch_npu/csrc/aten/npu_native_functions.*\.yaml$", name):
                    texts[name] = zf.read(name).decode("utf-8")
        self.custom_ops = _custom_ops(texts.values())
        self.public_ops = set(
            _literal(self._tree("torch_npu.utils.exposed_api"), "public_npu_functions") or ()
        )
        self._bindings: dict[str, dict[str, ast.AST]] = {}

    # -- public API ---------------------------------------------------------------
    def exists(self, qualname: str) -> bool:
        return self.resolve(qualname) is not None

    def members(self, qualname: str) -> set[str]:
        obj = self.resolve(qualname)
        if obj is None or obj[0] != "mod":
            return set()
        names = set(self._module_bindings(obj[1]))
        prefix = obj[1] + "."
        names |= {
            m[len(prefix) :] for m in self.sources if m.startswith(prefix) and "." not in m[len(prefix) :]
        }
        if obj[1] == "torch_npu":
            names |= self.exported_ops()
        return {n for n in names if not n.startswith("_")}

    def torch_additions(self) -> set[str]:
        """Names torch_npu adds to ``torch`` at import: the public distributed aliases of
        ``_init/patches/distributed_patches.py`` and ``Backend.<NAME>`` for each backend it
        registers (``Backend.register_backend("hccl", ...)`` sets ``Backend.HCCL``)."""
        added: set[str] = set()
        aliases = (
            _literal(self._tree("torch_npu._init.patches.distributed_patches"), "_PUBLIC_API_ALIASES") or ()
        )
        added |= {f"torch.{target}" for target, _source in aliases}
        for mod in [m for m, text in self.sources.items() if ".register_backend(" in text]:
            for node in ast.walk(self._tree(mod)):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "register_backend"
                    and node.args
                    and getattr(node.func.value, "attr", None) == "Backend"
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                ):
                    added.add(f"torch.distributed.Backend.{node.args[0].value.upper()}")
        return added

    def exported_ops(self) -> set[str]:
        return self.custom_ops & self.public_ops

    def resolve(self, qualname: str):
        parts = _normalise(qualname).split(".")
        if parts[0] != "torch_npu":
            return None
        obj: tuple | None = ("mod", "torch_npu")
        for part in parts[1:]:
            obj = self._attr(obj, part, set())
            if obj is None:
                return None
        return obj

    # -- resolution ---------------------------------------------------------------
    def _tree(self, mod: str) -> ast.Module:
        return _parse(self.sources[mod])

    def _attr(self, obj, name: str, seen: set):
        kind = obj[0]
        if kind == "mod":
            return self._module_attr(obj[1], name, seen)
        if kind in ("cls", "inst"):
            return self._class_attr(obj[1], obj[2], name, kind == "inst", seen)
        return None

    def _module_attr(self, mod: str, name: str, seen: set):
        if mod not in self.sources:
            return None
        binding = self._module_bindings(mod).get(name)
        if binding is not None:
            return self._value(mod, binding, seen)
        if f"{mod}.{name}" in self.sources:
            return ("mod", f"{mod}.{name}")
        if mod == "torch_npu" and (name in self.exported_ops() or name in self._lazy_top()):
            return ("leaf",)
        if name in (_literal(self._tree(mod), "__all__") or ()):
            return ("leaf",)  # promised by __all__, bound by the C extension (FloatTensor, ...)
        return None

    def _lazy_top(self) -> set[str]:
        lazy = _literal(self._tree("torch_npu._init.core._exports"), "_LAZY_PYTHON_SYMBOLS")
        return set(lazy or ()) | {"ParallelStore", "_ShardedGradScaler"}

    def _value(self, mod: str, node: ast.AST, seen: set):
        key = (mod, id(node))
        if key in seen:
            return None
        seen = seen | {key}
        if isinstance(node, ast.ClassDef):
            return ("cls", mod, node)
        if isinstance(node, _Import):
            return self._import_value(node, seen)
        if isinstance(node, ast.Call):
            cls = self._expr(mod, node.func, seen)
            return ("inst", cls[1], cls[2]) if cls and cls[0] == "cls" else ("leaf",)
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self._expr(mod, node, seen) or ("leaf",)
        return ("leaf",)

    def _import_value(self, node: _Import, seen: set):
        if node.attr is None:
            return ("mod", node.module) if node.module in self.sources else ("leaf",)
        if node.module in self.sources:
            return self._module_attr(node.module, node.attr, seen)
        return ("leaf",)  # imported from outside the wheel: exists, members unknown

    def _expr(self, mod: str, expr: ast.AST, seen: set):
        if isinstance(expr, ast.Name):
            return self._module_attr(mod, expr.id, seen)
        if isinstance(expr, ast.Attribute):
            base = self._expr(mod, expr.value, seen)
            return self._attr(base, expr.attr, seen) if base else None
        return None

    def _class_attr(self, mod: str, cls: ast.ClassDef, name: str, instance: bool, seen: set):
        for stmt in cls.body:
            for bound, value in _bound_names(stmt):
                if bound == name:
                    return self._value(mod, value, seen)
        for stmt in self._tree(mod).body:  # Cls.attr = ... at module level
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and target.attr == name
                        and isinstance(target.value, ast.Name)
                        and target.value.id == cls.name
                    ):
                        return self._value(mod, stmt.value, seen)
        if name in _getattr_names(cls) or (instance and name in _self_assigned(cls)):
            return ("leaf",)
        for base in cls.bases:
            found = self._expr(mod, base, seen)
            if found and found[0] == "cls":
                hit = self._class_attr(found[1], found[2], name, instance, seen)
                if hit:
                    return hit
        return None

    def _module_bindings(self, mod: str) -> dict[str, ast.AST]:
        if mod not in self._bindings:
            self._bindings[mod] = {}  # guards star-import cycles
            self._bindings[mod] = self._collect(mod)
        return self._bindings[mod]

    def _collect(self, mod: str) -> dict[str, ast.AST]:
        out: dict[str, ast.AST] = {}
        package = mod if mod in self.packages else mod.rpartition(".")[0]
        for stmt in _top_level(self._tree(mod).body):
            if isinstance(stmt, ast.ImportFrom):
                source = _absolute(package, stmt.module, stmt.level)
                for alias in stmt.names:
                    if alias.name == "*":
                        for star in self._star_names(source):
                            out[star] = _Import(source, star)
                    else:
                        out[alias.asname or alias.name] = _Import(source, alias.name)
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        out[alias.asname] = _Import(alias.name, None)
                    else:
                        top = alias.name.split(".")[0]
                        out[top] = _Import(top, None)
            else:
                for bound, value in _bound_names(stmt):
                    out[bound] = value
        return out

    def _star_names(self, mod: str) -> list[str]:
        if mod not in self.sources:
            return []
        declared = _literal(self._tree(mod), "__all__")
        if declared is not None:
            return list(declared)
        return [n for n in self._module_bindings(mod) if not n.startswith("_")]


class _Import(ast.AST):
    """A name bound by an import: ``module`` (absolute) and ``attr`` (None for a module)."""

    def __init__(self, module: str, attr: str | None):
        super().__init__()
        self.module, self.attr = module, attr


@cache
def _parse(source: str) -> ast.Module:
    return ast.parse(source)


def _normalise(qualname: str) -> str:
    if qualname == "torch.npu" or qualname.startswith("torch.npu."):
        return "torch_npu.npu" + qualname[len("torch.npu") :]
    return qualname


def _absolute(package: str, module: str | None, level: int) -> str:
    if level == 0:
        return module or ""
    base = package.split(".")
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _top_level(body: list[ast.stmt]):
    """Statements at module level, looking inside if/try/with blocks."""
    for stmt in body:
        if isinstance(stmt, (ast.If, ast.Try, ast.With)):
            yield from _top_level(stmt.body)
            yield from _top_level(getattr(stmt, "orelse", []))
            for handler in getattr(stmt, "handlers", []):
                yield from _top_level(handler.body)
            yield from _top_level(getattr(stmt, "finalbody", []))
        else:
            yield stmt


def _bound_names(stmt: ast.stmt):
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield stmt.name, ast.Constant(None)
    elif isinstance(stmt, ast.ClassDef):
        yield stmt.name, stmt
    elif isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            for name in _target_names(target):
                yield name, stmt.value if isinstance(target, ast.Name) else ast.Constant(None)
    elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        yield stmt.target.id, stmt.value if stmt.value is not None else ast.Constant(None)


def _target_names(target: ast.AST):
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _target_names(elt)


def _getattr_names(cls: ast.ClassDef) -> set[str]:
    """Strings a class's ``__getattr__`` compares its name argument with."""
    names: set[str] = set()
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "__getattr__":
            for node in ast.walk(stmt):
                if isinstance(node, ast.Compare):
                    for side in [node.left, *node.comparators]:
                        if isinstance(side, ast.Constant) and isinstance(side.value, str):
                            names.add(side.value)
    return names


def _self_assigned(cls: ast.ClassDef) -> set[str]:
    return {
        node.attr
        for node in ast.walk(cls)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }


def _literal(tree: ast.Module, name: str):
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in stmt.targets
        ):
            try:
                return ast.literal_eval(stmt.value)
            except ValueError:
                return None
    return None


def _custom_ops(texts) -> set[str]:
    """Op names in the ``custom:`` sections of the native-functions YAML files."""
    import yaml

    names: set[str] = set()
    for text in texts:
        for entry in (yaml.safe_load(text) or {}).get("custom") or ():
            match = _FUNC.match(str(entry.get("func", "")))
            if match:
                names.add(match.group(1))
    return names


@cache
def npu_wheel() -> NpuWheel:
    return NpuWheel(wheel_path())


def target_exists(target: str) -> bool:
    """Does a rule target exist once torch_npu is imported? ``X.*`` targets check ``X``.

    torch.npu / torch_npu names are looked up in the wheel; other torch names in the wheel's
    additions to torch, then in the installed torch.
    """
    base = target[:-2] if target.endswith(".*") else target
    if base == "torch.npu" or base.startswith(("torch.npu.", "torch_npu")):
        return npu_wheel().exists(base)
    if base in npu_wheel().torch_additions():
        return True
    return base.split(".")[0] == "torch" and installed_name_exists(base)


def installed_name_exists(qualname: str) -> bool:
    parts = qualname.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for part in parts[cut:]:
                obj = getattr(obj, part)
        except AttributeError:
            return False
        return True
    return False
