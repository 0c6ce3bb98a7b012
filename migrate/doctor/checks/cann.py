"""The CANN toolkit, its kernels package, the driver and firmware: which versions are
installed (from their install records) and whether they fit torch_npu and each other."""

from __future__ import annotations

import re

from migrate.doctor import pins
from migrate.doctor.checks import CHECKS
from migrate.doctor.context import Context
from migrate.doctor.install import find_kernels
from migrate.doctor.report import Outcome
from migrate.doctor.versions import in_range, numeric, parse_cann

GROUP = "cann"


def _wanted_cann(ctx: Context) -> str:
    """Which CANN to install: the release published for the installed (else the
    recommended) torch_npu, or the newest published pairing when that names none."""
    tnpu = ctx.torch_npu.version if ctx.torch_npu else None
    row = ctx.compat.release(tnpu) if tnpu else None
    if row is None:
        row = pins.choose_release(ctx, ctx.torch.version if ctx.torch else None)
    if row.cann is not None:
        return f"CANN {row.cann} (published for torch_npu {row.torch_npu})"
    paired = max((r for r in ctx.compat.releases if r.cann is not None), key=lambda r: r.torch_npu)
    return (
        f"the CANN release for torch_npu {row.torch_npu} (none is published; torch_npu "
        f"{paired.torch_npu} names CANN {paired.cann})"
    )


@CHECKS.register("cann-toolkit", group=GROUP, order=10)
def cann_toolkit(ctx: Context) -> Outcome:
    table = ctx.environment
    if not ctx.toolkits:
        places = [ctx.show(r / h.path) for r in ctx.layout.install_roots() for h in table.cann_homes]
        return Outcome(
            "fail",
            "no CANN toolkit found",
            [
                f"looked for {table.toolkit_info.path.format(arch=ctx.arch or '<arch>')}"
                f" under $ASCEND_HOME_PATH, $ASCEND_TOOLKIT_HOME and {', '.join(places)}"
            ],
            fix=f"install the toolkit of {_wanted_cann(ctx)}, then source its set_env.sh",
            sources=(table.toolkit_info.source.cite(),),
        )
    cann = ctx.cann
    assert cann is not None and cann.info is not None
    evidence = [f"record: {ctx.show(cann.info.path)}", f"found through: {cann.via}"]
    evidence += [
        f"also installed: CANN {other.version_text or '?'} at {ctx.show(other.home)}"
        for other in ctx.toolkits[1:]
    ]
    if cann.info.error:
        return Outcome(
            "fail",
            f"cannot read {ctx.show(cann.info.path)}",
            [cann.info.error, *evidence[1:]],
            fix=f"reinstall the CANN toolkit at {ctx.show(cann.home)} (its install record must be "
            "a readable regular file)",
        )
    if cann.version is None:
        return Outcome(
            "warn",
            f"CANN at {ctx.show(cann.home)}: version {cann.version_text!r} not understood",
            evidence,
        )
    return Outcome(
        "ok",
        f"CANN {cann.version_text} at {ctx.show(cann.home)}",
        evidence,
        sources=(table.toolkit_info.source.cite(),),
    )


@CHECKS.register("cann-kernels", group=GROUP, order=20)
def cann_kernels(ctx: Context) -> Outcome:
    cann = ctx.cann
    source = ctx.environment.kernels_info.source.cite()
    if cann is None or cann.version is None:
        return Outcome("skip", "no CANN toolkit to check against")
    kernels = find_kernels(cann)
    record = ctx.show(cann.home / ctx.environment.kernels_info.path)
    if kernels is None:
        if (cann.version.major, cann.version.minor) >= (8, 5):
            return Outcome(
                "skip",
                f"no {ctx.environment.kernels_info.path} record in CANN {cann.version_text}: not checked",
                [f"looked at {record}"],
            )
        return Outcome(
            "warn",
            f"no kernels (binary operator) package recorded for CANN {cann.version_text}",
            [
                f"missing: {record}",
                "without it operators fail with EZ3003 (no supported Ops kernel) or compile at run time",
            ],
            fix=f"install the CANN {cann.version_text} kernels package for your chip "
            "(Ascend-cann-kernels-<chip>)",
            sources=(source,),
        )
    if kernels.info.error:
        return Outcome(
            "fail",
            f"cannot read {record}",
            [kernels.info.error],
            fix=f"reinstall the CANN {cann.version_text} kernels package for your chip "
            "(Ascend-cann-kernels-<chip>)",
        )
    evidence = [f"record: {record}", f"kernels release: {kernels.release or '?'}"]
    release = parse_cann(kernels.release)
    if release is not None and release.release != cann.version.release:
        return Outcome(
            "fail",
            f"kernels of CANN {kernels.release} beside toolkit {cann.version_text}",
            evidence,
            fix=f"install the CANN {cann.version_text} kernels package for "
            "your chip (or the toolkit of the kernels' release)",
            sources=(source,),
        )
    verdict = _in_declared_range(cann.version_text or "", kernels.toolkit_range)
    if verdict is False:
        evidence.append(f"it requires toolkit {kernels.toolkit_range}")
        return Outcome(
            "fail",
            f"the kernels package does not take toolkit {cann.version_text}",
            evidence,
            fix=f"install the kernels package of CANN {cann.version_text}",
            sources=(source,),
        )
    return Outcome(
        "ok",
        f"kernels of CANN {kernels.release} installed",
        evidence,
        sources=(source,),
    )


def _in_declared_range(version: str, spec: str | None) -> bool | None:
    """``8.3.RC1`` against ``>=7.6, <=8.3`` (major.minor bounds); None: no verdict."""
    have = numeric(version, 2)
    if not spec or have is None:
        return None
    ok = True
    for op, bound in re.findall(r"(>=|<=|==|>|<)\s*([0-9][0-9.]*)", spec):
        limit = numeric(bound, 2)
        if limit is None:
            return None
        ok &= {
            ">=": have >= limit,
            "<=": have <= limit,
            "==": have == limit,
            ">": have > limit,
            "<": have < limit,
        }[op]
    return ok


@CHECKS.register("cann-pairing", group=GROUP, order=30)
def cann_pairing(ctx: Context) -> Outcome:
    cann = ctx.cann
    if ctx.torch_npu is None or ctx.torch_npu.version is None:
        return Outcome("skip", "torch_npu is not installed")
    if cann is None or cann.version is None:
        return Outcome("skip", "no CANN version to compare")
    tnpu = ctx.torch_npu.version
    row = ctx.compat.release(tnpu)
    here = cann.version
    alternatives = [
        r for r in ctx.compat.for_torch(tnpu) if r.cann is not None and r.cann.release == here.release
    ]
    other = (
        (f"or keep CANN {here} and pip install 'torch-npu=={alternatives[0].torch_npu}' (published for it)")
        if alternatives
        else ""
    )
    if row is None:
        ev = [f"torch_npu {ctx.torch_npu.version_text} is not in the published table"]
        ev += [
            f"published for torch {r.torch}: torch_npu {r.torch_npu} with CANN {r.cann}"
            for r in ctx.compat.for_torch(tnpu)[:4]
        ]
        return Outcome(
            "warn",
            f"no published pairing for torch_npu {ctx.torch_npu.version_text}",
            ev,
            fix=other or None,
        )
    cite = (row.source.cite(),)
    if row.cann is None:
        return Outcome(
            "warn",
            f"no CANN release is published for torch_npu {tnpu}",
            [f"installed: CANN {here}"],
            sources=cite,
        )
    evidence = [f"torch_npu {tnpu} was published for CANN {row.cann}", f"installed: CANN {here}"]
    if here.release == row.cann.release and not here.is_prerelease:
        return Outcome(
            "ok",
            f"CANN {here} is the release published for torch_npu {tnpu}",
            evidence,
            sources=cite,
        )
    if here < row.cann:
        evidence.append(
            "torch_npu calls CANN functions an older CANN lacks: 'Failed to find "
            "function aclnnXxx, maybe you cann version is too low' or 'undefined symbol: aclnnXxx'"
        )
        fix = f"install CANN {row.cann}" + (f"\n{other}" if other else "")
        return Outcome(
            "fail",
            f"CANN {here} is older than the CANN {row.cann} torch_npu {tnpu} was published for",
            evidence,
            fix=fix,
            sources=cite,
        )
    evidence.append(
        "not a published pair: builds of torch_npu have failed on newer CANN with "
        "'undefined symbol: aclrtXxx'"
    )
    return Outcome(
        "warn",
        f"CANN {here} differs from the CANN {row.cann} torch_npu {tnpu} was published for",
        evidence,
        fix=other or f"install CANN {row.cann}",
        sources=cite,
    )


@CHECKS.register("driver", group=GROUP, order=40)
def driver(ctx: Context) -> Outcome:
    drv = ctx.driver
    table = ctx.environment
    cite = (table.driver_info.source.cite(),)
    record = ctx.show(drv.base / table.driver_info.path)
    hal = _driver_library(ctx)
    if drv.info is None and hal is not None:
        # A container that mounts the driver's libraries but not its version record:
        # the driver is there, its version cannot be read.
        return Outcome(
            "warn",
            "the driver's libraries are here, its version record is not",
            [f"missing: {record}", f"found: {hal}"],
            fix="mount /usr/local/Ascend/driver/version.info and /etc/ascend_install.info into "
            "the container so the driver version can be checked",
            sources=(*cite, table.device_nodes.source.cite()),
        )
    if drv.info is None:
        return Outcome(
            "fail",
            "no NPU driver found",
            [f"missing: {record}"],
            fix="install the NPU driver and firmware (Ascend HDK) for your card; in a "
            "container, mount /usr/local/Ascend/driver and /etc/ascend_install.info",
            sources=(*cite, table.device_nodes.source.cite()),
        )
    if drv.info.error:
        return Outcome(
            "fail",
            f"cannot read {record}",
            [drv.info.error],
            fix="reinstall the NPU driver (Ascend HDK); in a container, mount the host's "
            "/usr/local/Ascend/driver/version.info",
        )
    evidence = [f"record: {record}"]
    if drv.install_info is not None:
        evidence.append(f"install path from {ctx.show(drv.install_info.path)}")
    if not drv.version:
        return Outcome("warn", "the driver record names no version", evidence)
    return Outcome("ok", f"driver {drv.version}", evidence, sources=cite)


def _driver_library(ctx: Context) -> str | None:
    """Where the loader finds the driver's library (libascend_hal.so), if anywhere."""
    from migrate.doctor.checks.environment import resolve, search_dirs

    for lib in ctx.environment.libraries:
        if lib.extra["provider"] == "driver":
            hit = resolve(lib.path, search_dirs(ctx), ctx.arch)
            if hit is not None:
                return ctx.show(hit[0])
    return None


_RANGE = re.compile(r"\[\s*([^,\]\s]+)\s*,\s*([^\]\s]+)\s*\]")


@CHECKS.register("firmware", group=GROUP, order=50)
def firmware(ctx: Context) -> Outcome:
    drv = ctx.driver
    record = ctx.show(drv.base / ctx.environment.firmware_info.path)
    if drv.firmware is None:
        return Outcome(
            "skip",
            "no firmware record visible here (containers usually do not mount it)",
            [f"looked at {record}"],
        )
    if drv.firmware.error or not drv.firmware_version:
        return Outcome(
            "warn",
            f"cannot read the firmware version from {record}",
            [drv.firmware.error or "no Version= line"],
        )
    evidence = [f"record: {record}"]
    declared = drv.info.get("compatible_version_fw") if drv.info else None
    m = _RANGE.search(declared or "")
    if not m:
        return Outcome("ok", f"firmware {drv.firmware_version}", evidence)
    evidence.append(f"the driver {drv.version} declares firmware {m.group(1)} to {m.group(2)}")
    verdict = in_range(drv.firmware_version, m.group(1), m.group(2))
    if verdict is False:
        return Outcome(
            "warn",
            f"firmware {drv.firmware_version} is outside the range the driver declares",
            evidence,
            fix="install the firmware that goes with the driver (the same Ascend HDK release)",
        )
    return Outcome("ok", f"firmware {drv.firmware_version}", evidence)
