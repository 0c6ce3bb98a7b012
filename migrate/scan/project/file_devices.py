"""What a portable rewrite of one file may route through: the project's helpers
(``HelperRef``) and the rest of ``FileDevices`` (per file, frozen, picklable: it travels
with each scan work item and is part of the cache key).
"""

from __future__ import annotations

from dataclasses import dataclass

from migrate.scan.check_family import CheckFamily


@dataclass(frozen=True)
class HelperRef:
    """A project helper: ``module.name`` answers ``kind`` (called, or read when a variable)."""

    kind: str
    module: str  # where it is defined
    name: str
    call: bool = True
    ours: bool = False
    publics: tuple[str, ...] = ()  # packages whose __init__ re-exports it, shallowest first

    def import_from(self, importer: str | None) -> str:
        """Where the module ``importer`` (None: a script) imports it from: the shallowest
        package that re-exports it and does not contain the importer (importing through an
        __init__ the importer belongs to can be circular), else the defining module."""
        for public in self.publics:
            if importer is None or not (importer == public or importer.startswith(public + ".")):
                return public
        return self.module

    @property
    def public(self) -> str:
        return self.publics[0] if self.publics else self.module

    def describe(self) -> str:
        return f"{self.public}.{self.name}{'()' if self.call else ''}"


@dataclass(frozen=True)
class FileDevices:
    """What a portable rewrite of one file may route through."""

    module: str | None = None  # the file's dotted module name; None: a script
    package: str | None = None  # its top-level package
    helpers: tuple[HelperRef, ...] = ()  # the project's, one per kind
    add_module: str | None = None  # where the port's own helper goes (None: in the file)
    add_path: str | None = None  # ... and its path relative to the scan root
    min_torch: tuple[int, int] | None = None
    npu_arms: frozenset[str] = frozenset()
    # the project's type helper the added module imports (module, name), if it has one
    type_from: tuple[str, str] | None = None
    # how its package imports its own modules: relatively (True) where most of its files
    # do, else absolutely (False); None outside a package (the file's own imports decide)
    relative_imports: bool | None = None
    # a script outside any package: whether another scanned file imports it by its name
    # (then it is a module, not a program: --target transfer); None: not known
    imported: bool | None = None
    # rules/npu_checks.yaml modules whose library is in the scanned tree without the check
    # (migrate/scan/python/npu_checks.py absent_checks): the port does not import it
    absent_checks: frozenset[str] = frozenset()
    # the project's family of device checks a port may test with (scan/check_family.py)
    family: CheckFamily | None = None
    # the libraries' NPU checks (module, name) the package's modules import at top level,
    # most imported first, none from the package itself (project/library_imports.py)
    library_checks: tuple[tuple[str, str], ...] = ()

    def helper(self, kind: str) -> HelperRef | None:
        return next((h for h in self.helpers if h.kind == kind), None)

    def key(self) -> str:
        return repr(self)


SCRIPT = FileDevices()


# How rule examples are ported (`migrate rules`, tests/meta/test_rule_examples.py): as a
# module of a package ``pkg`` without helpers of its own.
EXAMPLE = FileDevices(
    module="pkg.example", package="pkg", add_module="pkg._device", add_path="pkg/_device.py"
)
