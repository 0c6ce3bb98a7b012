"""A consistent set of pins: which torch and torch_npu to install together, and which other
installed packages would then need reinstalling because they pin torch themselves.

torch_npu needs the CPU build of torch (a CUDA build makes it refuse to load: "Two
accelerators cannot be used at the same time"). On aarch64 the default torch wheels are CPU
builds; on x86_64 they are CUDA builds, so torch_npu's README installs torch from PyTorch's
CPU wheel index there (``--index-url`` with the ``cpu`` channel).
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from migrate.doctor.context import Context
from migrate.doctor.tables import Release


def torch_line(version: Version | str, arch: str | None) -> str:
    """The pip line for the CPU build of torch ``version`` on this architecture."""
    release = ".".join(map(str, Version(str(version)).release[:3]))
    if arch == "aarch64":
        return f"pip install 'torch=={release}'"
    return (
        f"pip install 'torch=={release}+cpu' --index-url <PyTorch's CPU wheel index, as in "
        f"torch_npu's README>"
    )


@dataclass
class PinSet:
    torch: Version
    torch_npu: Version
    dependents: list[str]  # "torchvision 0.29.1 (requires torch==2.14.1)"

    def lines(self, arch: str | None, install_torch: bool, install_npu: bool) -> str:
        out = []
        if install_torch:
            out.append(torch_line(self.torch, arch))
        if install_npu:
            out.append(f"pip install 'torch-npu=={self.torch_npu}'")
        if self.dependents:
            out.append(
                "then reinstall builds of these for torch "
                f"{'.'.join(map(str, self.torch.release[:3]))}: " + "; ".join(self.dependents)
            )
        return "\n".join(out)


def blocked_dependents(ctx: Context, torch: Version) -> list[str]:
    """Installed packages whose own torch requirement excludes ``torch``."""
    out = []
    for name, info in sorted(ctx.dependents().items()):
        if name in ("torch-npu",):
            continue
        requires = info.get("requires")
        for text in requires if isinstance(requires, list) else ():
            try:
                req = Requirement(str(text))
            except InvalidRequirement:
                continue
            if req.marker is not None and (
                "extra" in str(req.marker)
                or (ctx.markers is not None and not req.marker.evaluate(ctx.markers))
            ):
                continue
            if req.specifier and not req.specifier.contains(torch, prereleases=True):
                out.append(f"{name} {info.get('version')} (requires {req})")
    return out


def choose_release(ctx: Context, torch: Version | None) -> Release:
    """The torch_npu release to recommend: one built for ``torch`` (the one published for the
    installed CANN if there is one, else the newest), or the newest release overall."""
    rows = ctx.compat.for_torch(torch) if torch is not None else []
    cann = ctx.cann.version if ctx.cann else None
    if cann is not None:
        for row in rows:
            if row.cann is not None and row.cann.release == cann.release:
                return row
    return rows[0] if rows else ctx.compat.newest()


def pinned_version(spec: SpecifierSet | None) -> Version | None:
    """The version an ``==X.*`` / ``==X`` specifier pins."""
    for s in spec or ():
        if s.operator in ("==", "==="):
            try:
                return Version(s.version.removesuffix(".*"))
            except InvalidVersion:
                return None
    return None


def target(ctx: Context) -> PinSet:
    """The one torch / torch_npu pair every check recommends (torch, torch-npu and
    torch-pin name the same torch): with torch_npu installed, that release and the torch it
    requires (its ``==X.*`` pin, else its published row, else the torch installed); without
    it, the release :func:`choose_release` picks for the installed torch, and its torch."""
    tnpu = ctx.torch_npu.version if ctx.torch_npu else None
    torch_have = ctx.torch.version if ctx.torch else None
    if tnpu is not None:
        row = ctx.compat.release(tnpu)
        torch = pinned_version(ctx.torch_npu_requires()) or (row.torch if row else None) or torch_have
        if torch is not None:
            return PinSet(torch, tnpu, blocked_dependents(ctx, torch))
    row = choose_release(ctx, torch_have)
    return PinSet(row.torch, row.torch_npu, blocked_dependents(ctx, row.torch))
