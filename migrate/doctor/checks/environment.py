"""The environment CANN's set_env.sh sets, and the shared libraries the port loads."""

from __future__ import annotations

import glob
from pathlib import Path

from migrate.core.fileio import SourceError, read_bytes
from migrate.doctor.checks import CHECKS
from migrate.doctor.context import Context
from migrate.doctor.install import CannInstall
from migrate.doctor.report import Outcome

GROUP = "environment"


def source_line(ctx: Context, cann: CannInstall | None) -> str | None:
    """``source /usr/local/Ascend/cann/set_env.sh`` for the toolkit found, if it has one (the
    path as the host under test names it)."""
    if cann is None or cann.set_env is None:
        return None
    return f"source {ctx.show(cann.set_env)}"


@CHECKS.register("set-env", group=GROUP, order=10)
def set_env(ctx: Context) -> Outcome:
    """What torch_npu checks when it loads (registry_manager.py): a variable that names a
    missing folder, or ASCEND_HOME_PATH without its runtime/compiler folders, fails the
    import; a variable not set at all is the table's ``unset`` verdict."""
    table = ctx.environment
    cites = tuple(dict.fromkeys(s.cite() for v in table.variables for s in v.extra["sources"]))
    problems, evidence, status = [], [], "ok"
    for var in table.variables:
        value = ctx.env.get(var.path)
        if not value:
            problems.append(f"{var.path} is not set")
            status = _worse(status, var.extra["unset"])
        elif not ctx.layout.host(value).is_dir():
            problems.append(f"{var.path}={value} does not exist")
            status = "fail"
        else:
            evidence.append(f"{var.path}={value}")
    home = ctx.env.get("ASCEND_HOME_PATH")
    if home and ctx.layout.host(home).is_dir():
        for sub in table.home_dirs:
            if not ctx.layout.host(f"{home.rstrip('/')}/{sub.path}").is_dir():
                problems.append(f"$ASCEND_HOME_PATH/{sub.path} does not exist (a CANN package is missing)")
                status = "fail"
    if status == "ok":
        if ctx.cann is not None and ctx.cann.via == "default location":
            evidence.append(
                f"note: $ASCEND_HOME_PATH holds no toolkit record; the toolkit "
                f"checked is the one at {ctx.show(ctx.cann.home)}"
            )
        return Outcome("ok", "the CANN environment is set", evidence, sources=cites)
    if ctx.cann is None:
        fix = "install the CANN toolkit, then source its set_env.sh"
    else:
        fix = source_line(ctx, ctx.cann) or f"source the set_env.sh of the CANN at {ctx.show(ctx.cann.home)}"
    summary = (
        "the CANN environment is not set (set_env.sh not sourced in this shell)"
        if status == "fail"
        else "the CANN environment is only partly set"
    )
    return Outcome(status, summary, problems + evidence, fix=fix, sources=cites)


def _worse(a: str, b: str) -> str:
    order = ("ok", "skip", "warn", "fail")
    return max(a, b, key=order.index)


def search_dirs(ctx: Context) -> list[tuple[Path, str]]:
    """Where the dynamic loader looks, in order: LD_LIBRARY_PATH, then /etc/ld.so.conf(.d),
    then the default folders (all of them the host's, read under --root)."""
    out: list[tuple[Path, str]] = []
    for entry in (ctx.env.get("LD_LIBRARY_PATH") or "").split(":"):
        if entry:
            out.append((ctx.layout.host(entry), "LD_LIBRARY_PATH"))
    out += [(d, "ld.so.conf") for d in _ld_so_conf(ctx)]
    arch = ctx.arch or "x86_64"
    for default in (
        "/lib",
        "/usr/lib",
        "/lib64",
        "/usr/lib64",
        f"/lib/{arch}-linux-gnu",
        f"/usr/lib/{arch}-linux-gnu",
    ):
        out.append((ctx.layout.system(default), "default"))
    return out


def _ld_so_conf(ctx: Context, limit: int = 64) -> list[Path]:
    """Folders named in /etc/ld.so.conf and the files it includes (at most ``limit`` files,
    64 KiB each)."""
    dirs: list[Path] = []
    todo = [ctx.layout.system("/etc/ld.so.conf")]
    seen = 0
    while todo and seen < limit:
        path = todo.pop(0)
        seen += 1
        try:
            data, _ = read_bytes(path, limit=64 * 1024)
        except SourceError:
            continue
        for raw in data.decode("utf-8", "replace").splitlines():
            line = raw.split("#", 1)[0].strip()
            if line.startswith("include "):
                pattern = str(ctx.layout.system(line.split(None, 1)[1].strip()))
                todo.extend(Path(p) for p in sorted(glob.glob(pattern))[:limit])
            elif line.startswith("/"):
                dirs.append(ctx.layout.system(line))
    return dirs


ELF_MACHINES = {62: "x86_64", 183: "aarch64"}  # e_machine (the ELF specification's EM_ values)


def elf_problem(path: Path, arch: str | None) -> str | None:
    """Why ``path`` is not a shared library the loader would take for this architecture
    (None: an ELF file of it). Only the 20-byte header is read."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not head:
        return "an empty file (0 bytes), not a shared library"
    if head[:4] != b"\x7fELF":
        return "not an ELF file (no \\x7fELF magic): not a shared library"
    if len(head) < 20:
        return "a truncated ELF header"
    number = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    machine = ELF_MACHINES.get(number)
    if arch in ELF_MACHINES.values() and machine is not None and machine != arch:
        return f"built for {machine}, this host is {arch}"
    return None


def resolve(
    name: str, dirs: list[tuple[Path, str]], arch: str | None = None, rejected: list[str] | None = None
) -> tuple[Path, str] | None:
    """The first file named ``name`` in ``dirs`` that is an ELF shared library (of ``arch``
    when known); what was passed over, and why, goes to ``rejected``."""
    for folder, why in dirs:
        candidate = folder / name
        if not candidate.is_file():  # follows symlinks: a dangling link does not count
            continue
        problem = elf_problem(candidate, arch)
        if problem is None:
            return candidate, why
        if rejected is not None:
            rejected.append(f"{candidate}: {problem}")
    return None


@CHECKS.register("libraries", group=GROUP, order=20)
def libraries(ctx: Context) -> Outcome:
    table = ctx.environment
    dirs = search_dirs(ctx)
    evidence, missing, fixes, warn_only = [], [], [], []
    rejected: list[str] = []
    for lib in table.libraries:
        passed_over: list[str] = []
        hit = resolve(lib.path, dirs, ctx.arch, passed_over)
        rejected += [ctx.show(r) for r in passed_over]
        if passed_over and hit is None and lib.extra["required"]:
            fixes.append(_reinstall(ctx, lib.extra["provider"]))
        if hit is not None:
            evidence.append(f"{lib.path}: {ctx.show(hit[0])} (via {hit[1]})")
            continue
        provider, required = lib.extra["provider"], lib.extra["required"]
        if not required:
            if ctx.nnal is None:
                evidence.append(
                    f"{lib.path}: not found; NNAL is not installed (needed only for "
                    "ATB operators, e.g. by vllm-ascend)"
                )
                continue
            warn_only.append(lib.path)
            fixes.append(f"source {ctx.show(ctx.nnal[1])}")
            continue
        missing.append(lib.path)
        fixes.append(_fix_for(ctx, provider))
    fixes = list(dict.fromkeys(f for f in fixes if f))
    evidence += [f"passed over: {r}" for r in rejected[:16]]
    cites = tuple(dict.fromkeys(lib.source.cite() for lib in table.libraries))
    if missing:
        return Outcome(
            "fail",
            f"not found by the loader: {', '.join(missing)}",
            evidence + ["searched: LD_LIBRARY_PATH, ld.so.conf and the default folders"],
            fix="\n".join(fixes) or None,
            sources=cites,
        )
    if warn_only:
        return Outcome(
            "warn",
            f"NNAL is installed but {', '.join(warn_only)} is not on the library path",
            evidence,
            fix="\n".join(fixes),
            sources=cites,
        )
    return Outcome("ok", "the CANN and driver libraries resolve", evidence, sources=cites)


def _reinstall(ctx: Context, provider: str) -> str:
    """The fix for a library that is there but is not a shared library of this host."""
    if provider == "cann":
        where = f" at {ctx.show(ctx.cann.home)}" if ctx.cann else ""
        return (
            f"reinstall the CANN toolkit{where} (its libraries passed over above are not "
            "shared libraries of this host)"
        )
    if provider == "driver":
        return "reinstall the NPU driver (Ascend HDK) for this host's architecture"
    return f"reinstall {provider}"


def _fix_for(ctx: Context, provider: str) -> str:
    if provider == "cann":
        line = source_line(ctx, ctx.cann)
        return line or "install the CANN toolkit, then source its set_env.sh"
    base = ctx.driver.base
    dirs = [base / d.path for d in ctx.environment.driver_lib_dirs]
    if any(d.is_dir() for d in dirs):
        joined = ":".join(ctx.show(d) for d in dirs)
        return f"export LD_LIBRARY_PATH={joined}:$LD_LIBRARY_PATH"
    return (
        "install the NPU driver (Ascend HDK); in a container, mount "
        f"{ctx.environment.driver_lib_dirs[0].path} from the host"
    )
