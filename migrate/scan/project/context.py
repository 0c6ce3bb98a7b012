"""The project context: per package found under the scanned files (``PackageInfo``) its
helpers and where the port's own would go, and the ``FileDevices`` of each file from it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from migrate.core.display import shown_path
from migrate.scan.check_family import CheckFamily
from migrate.scan.project.facts import _FileFacts, imported_tops
from migrate.scan.project.file_devices import FileDevices, HelperRef
from migrate.scan.project.packages import _relative_to, package_of
from migrate.scan.project.reading import _read


@dataclass
class PackageInfo:
    path: Path  # the package folder
    name: str
    helpers: tuple[HelperRef, ...] = ()
    add_module: str | None = None
    add_path: str | None = None
    min_torch: tuple[int, int] | None = None
    npu_arms: frozenset[str] = frozenset()
    type_from: tuple[str, str] | None = None  # see FileDevices
    uses: frozenset[str] = frozenset()  # top-level packages its modules import
    adopted: str | None = None  # the package whose helpers it uses (it has none)
    relative_imports: bool = False  # see FileDevices
    # its modules also run by path (a `__main__` block, siblings imported by bare name:
    # pytorch/examples fast_neural_style), as paths relative to the package folder
    run_by_path: frozenset[str] = frozenset()
    family: CheckFamily | None = None  # its family of device checks (scan/check_family.py)
    # the libraries' NPU checks its modules import, most imported first (library_imports.py)
    checks: tuple[tuple[str, str, int], ...] = ()


@dataclass
class ProjectContext:
    """Per package found under the scanned files: its helpers and where ours would go."""

    root: Path
    packages: dict[str, PackageInfo] = field(default_factory=dict)  # by top folder
    scripts_min_torch: dict[str, tuple[int, int] | None] = field(default_factory=dict)
    configured: str | None = None  # [tool.migrate] device-helper
    paths: dict[str, Path] = field(default_factory=dict)  # reported path -> path on disk
    scripts: dict[str, PackageInfo] = field(default_factory=dict)  # the package a script uses
    known: dict = field(default_factory=dict, repr=False)  # what each folder is (package_of)
    jobs: int | None = None  # worker processes for reading large packages
    # per package top: its files and their signature, listed once (Discovery), and the facts
    # of each of those files when the caller read them in its own pass
    listed: dict[str, tuple[list[str], str | None]] = field(default_factory=dict, repr=False)
    read: dict[str, list[_FileFacts | None]] = field(default_factory=dict, repr=False)
    # per script outside any package (its path as given): the packages it imports, when
    # the caller read it
    script_uses: dict[str, set[str]] = field(default_factory=dict, repr=False)
    # scripts outside any package (reported paths) that another scanned file imports by name
    imported_scripts: set[str] = field(default_factory=set)
    # files in a namespace folder of a package (reported path -> (package top, module,
    # imports relatively)): migrate/scan/project/namespace.py
    namespaced: dict[str, tuple[str, str, bool]] = field(default_factory=dict)
    # a module run by path (its path) -> the top-level names it imports
    runner_imports: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    # per folder holding scanned code (a package's parent, a script's folder): the library
    # checks its tree lacks (FileDevices.absent_checks)
    absent: dict[str, frozenset[str]] = field(default_factory=dict)
    _real_paths: set[str] | None = field(default=None, repr=False)

    def package_of(self, path: Path) -> tuple[Path | None, str | None]:
        return package_of(path, self.known, self.root)

    def for_file(self, rel: str) -> FileDevices:
        path = self.paths.get(rel) or self.root / rel
        top, module = self.package_of(path)
        relative = None
        if top is None and rel in self.namespaced:
            folder, module, relative = self.namespaced[rel]
            top = Path(folder)
        absent = self.absent.get(str(path.parent if top is None else top.parent), frozenset())
        if top is None:
            donor = self.scripts.get(rel)
            floor = self.scripts_min_torch.get(str(path.parent))
            imported = rel in self.imported_scripts
            if donor is None:
                return FileDevices(min_torch=floor, imported=imported, absent_checks=absent)
            return FileDevices(
                helpers=donor.helpers,
                add_module=donor.add_module,
                add_path=donor.add_path,
                min_torch=floor or donor.min_torch,
                npu_arms=donor.npu_arms,
                type_from=donor.type_from,
                imported=imported,
                absent_checks=absent,
                family=self._family(donor),
            )
        info = self.packages.get(str(top))
        if info is None:
            return FileDevices(absent_checks=absent)
        if _relative_to(path, top) in info.run_by_path or self._imported_by_runner(path, top, info):
            # run by path, or imported by bare name from a module that is (``import utils``):
            # its package is not importable there, so it is ported as a script is
            return FileDevices(min_torch=info.min_torch, absent_checks=absent)
        return FileDevices(
            module=module,
            package=info.name,
            helpers=info.helpers,
            add_module=info.add_module,
            add_path=info.add_path,
            min_torch=info.min_torch,
            npu_arms=info.npu_arms,
            type_from=info.type_from,
            relative_imports=info.relative_imports if relative is None else relative,
            # a namespace folder's file: known as a script's (--target transfer: its entry shape)
            imported=None if relative is None else rel in self.imported_scripts,
            absent_checks=absent,
            family=self._family(info),
            library_checks=tuple((m, n) for m, n, _ in info.checks),
        )

    def _family(self, info: PackageInfo) -> CheckFamily | None:
        """The package's family of device checks where a port may test with its NPU member:
        the module defines it, or is among the files ported (which add it), through the
        packages that export it or, among the files ported, will."""
        family = info.family
        if family is None:
            return None
        base = info.path.parent
        if family.defined:
            return family
        if not self._ported(base / family.rel):
            return None
        publics = tuple(
            p for p in family.publics if self._ported(base.joinpath(*p.split("."), "__init__.py"))
        )
        return replace(family, publics=publics)

    def _ported(self, path: Path) -> bool:
        if self._real_paths is None:
            self._real_paths = {os.path.realpath(p) for p in self.paths.values()}
        return os.path.realpath(path) in self._real_paths

    def _imported_by_runner(self, path: Path, top: Path, info: PackageInfo) -> bool:
        """Does a module of the package run by path, in the folder of ``path``, import it by
        bare name (fast_neural_style's ``neural_style.py``: ``import utils``)?"""
        here = os.path.dirname(_relative_to(path, top))
        for runner in info.run_by_path:
            if os.path.dirname(runner) != here:
                continue
            key = os.path.join(os.fspath(top), runner)
            heads = self.runner_imports.get(key)
            if heads is None:
                heads = self.runner_imports[key] = frozenset(imported_tops(_read(Path(key))))
            if path.stem in heads:
                return True
        return False

    def key(self) -> str:
        """Part of the scan cache key: portable fixes depend on it."""
        return (
            "devices="
            + ";".join(
                f"{k}:{p.helpers}:{p.add_module}:{p.min_torch}:{sorted(p.npu_arms)}:{p.type_from}"
                f":{p.relative_imports}:{sorted(p.run_by_path)}:{p.family}:{p.checks}"
                for k, p in sorted(self.packages.items())
            )
            + f";{sorted(self.scripts_min_torch.items())};"
            + ";".join(f"{r}:{p.name}" for r, p in sorted(self.scripts.items()))
            + f";imported={sorted(self.imported_scripts)}"
            + f";namespaced={sorted(self.namespaced.items())}"
            + f";absent={sorted((k, sorted(v)) for k, v in self.absent.items() if v)}"
        )

    def describe(self) -> list[tuple[str, str]]:
        """(package, what its portable rewrites route through), for the reports."""
        out = []
        for info in sorted(self.packages.values(), key=lambda p: p.name):
            chosen = [h.describe() for h in info.helpers]
            if chosen:
                via = f" (imports {info.adopted})" if info.adopted else ""
                out.append((info.name, ", ".join(chosen) + via))
            elif info.checks:  # its modules' check, in files with none (npu_checks.package_check)
                module, name, _ = info.checks[0]
                out.append((info.name, f"{module}.{name}(), as its modules import it"))
            elif info.add_path:
                shown = shown_path(info.add_path, self.root)
                out.append((info.name, f"adds {shown} (get_device_type(), ...)"))
            family = self._family(info)
            if family is not None:  # files importing from it test with its NPU member
                adds = "" if family.defined else ", added beside " + family.anchor + "()"
                out.append((info.name, f"{family.module}.{family.name}(){adds} where imported"))
        for name in sorted({p.name for p in self.scripts.values()}):
            donor = next(p for p in self.scripts.values() if p.name == name)
            what = ", ".join(h.describe() for h in donor.helpers) or f"adds {donor.add_path}"
            out.append((f"scripts importing {name}", what))
        return out
