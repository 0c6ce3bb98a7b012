"""The NPUs this process can reach: device nodes, the variables that select devices, and
processes that still hold a device (a leftover training run)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from migrate.doctor import npusmi
from migrate.doctor.checks import CHECKS
from migrate.doctor.context import Context
from migrate.doctor.explain import explain_text
from migrate.doctor.report import Outcome

GROUP = "devices"
MAX_PROCESSES = 4096  # /proc entries inspected
MAX_FDS = 4096  # descriptors inspected per process


def is_device_node(path: Path) -> bool:
    """A character device (what the driver makes; a regular file or folder by that name
    is not a device, and opening it fails in the runtime)."""
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def device_nodes(ctx: Context) -> tuple[list[Path], list[Path], list[Path]]:
    """(numbered device nodes /dev/davinciN, shared nodes that are missing, names that are
    there but are not character devices)."""
    spec = ctx.environment.device_nodes
    pattern = re.compile(spec.path)
    dev = ctx.layout.system("/dev")
    numbered: list[Path] = []
    impostors: list[Path] = []
    try:
        names = sorted(os.listdir(dev))
    except OSError:
        names = []
    for name in names:
        if pattern.fullmatch(f"/dev/{name}"):
            (numbered if is_device_node(dev / name) else impostors).append(dev / name)
    numbered.sort(key=lambda p: int(re.sub(r"\D", "", p.name) or 0))
    missing = []
    for shared in spec.extra["shared"]:
        path = ctx.layout.system(shared)
        if not is_device_node(path):
            missing.append(path)
            if os.path.lexists(path):
                impostors.append(path)
    return numbered, missing, impostors


@CHECKS.register("device-nodes", group=GROUP, order=10)
def nodes(ctx: Context) -> Outcome:
    spec = ctx.environment.device_nodes
    cite = (spec.source.cite(),)
    numbered, missing, impostors = device_nodes(ctx)
    evidence = (
        [
            f"{len(numbered)} device node(s): {', '.join(p.name for p in numbered[:16])}"
            + (" ..." if len(numbered) > 16 else "")
        ]
        if numbered
        else []
    )
    shared = spec.extra["shared"]
    fix = "on the host, check the driver (npu-smi info); in a container, pass the devices: " + " ".join(
        f"--device {p}" for p in ["/dev/davinciN", *shared]
    )
    evidence += [
        f"{ctx.show(p)} is not a character device ({_kind(p)}): not made by the driver"
        for p in impostors[:16]
    ]
    if not numbered:
        return Outcome(
            "fail",
            "no NPU device nodes (/dev/davinciN)",
            [f"looked in {ctx.show(ctx.layout.system('/dev'))}", *evidence],
            fix=fix,
            sources=cite,
        )
    if missing:
        return Outcome(
            "fail",
            "shared device nodes are missing: " + ", ".join(p.name for p in missing),
            evidence,
            fix=fix,
            sources=cite,
        )
    denied = [p.name for p in numbered if not os.access(p, os.R_OK | os.W_OK)]
    if denied:
        evidence.append(f"not readable and writable by this user: {', '.join(denied)}")
        return Outcome(
            "fail",
            "this user cannot open the device nodes",
            evidence,
            fix="run as a user allowed to use the devices (check the owner and mode of /dev/davinci*)",
            sources=cite,
        )
    return Outcome("ok", f"{len(numbered)} NPU device node(s)", evidence, sources=cite)


BUSY = 0.5  # share of a chip's memory in use that says another job holds it


@CHECKS.register("npu-smi", group=GROUP, order=15)
def npu_smi(ctx: Context) -> Outcome:
    """The driver's view (``npu-smi info``, when it is on the host's PATH): each chip's
    health and memory in use, and the processes on it."""
    path = npusmi.find(ctx.layout)
    if path is None:
        return Outcome(
            "skip", "npu-smi is not on PATH (the driver installs it on the host; containers rarely have it)"
        )
    shown = ctx.show(path)
    code, out, err = npusmi.run(path, ctx.probe_env())
    reinstall = "reinstall or reload the NPU driver (Ascend HDK) for this card, then run npu-smi info again"
    if code is None:
        return Outcome("fail", f"{shown} info did not answer in {npusmi.TIMEOUT:g} s", fix=reinstall)
    info = npusmi.parse(out)
    if code != 0 or not info.chips:
        said = [line.strip()[:1000] for line in (err + "\n" + out).splitlines() if line.strip()][:3]
        evidence = [
            f"{shown} info exited with {code}",
            *said,
            *(str(h) for h in explain_text(err + out, ctx.errors)),
        ]
        if code == 0:
            return Outcome("warn", "npu-smi info printed no chip this doctor understands", evidence[1:6])
        return Outcome("fail", "npu-smi info fails: the driver does not answer", evidence[:8], fix=reinstall)
    evidence = [f"{shown} {info.version or ''}".rstrip()]
    for c in info.chips[:32]:
        memory = f", memory {c.memory_used} / {c.memory_total} MB" if c.memory_total else ""
        evidence.append(f"{c.label}: {c.name}, health {c.health}{memory}, bus {c.bus}")
    for p in info.processes[:16]:
        memory = "?" if p.memory is None else str(p.memory)
        evidence.append(f"pid {p.pid} ({p.name}) uses {memory} MB on NPU {p.npu} chip {p.chip}")
    sick = [c for c in info.chips if c.health != npusmi.HEALTHY]
    severe = [c for c in sick if c.health.lower() != "warning"]
    busy = [c for c in info.chips if c.memory_total and (c.memory_used or 0) > BUSY * c.memory_total]
    health_fix = "\n".join(f"npu-smi info -t health -i {c.npu} -c {c.chip}" for c in sick[:8])
    if severe:
        return Outcome(
            "fail",
            "unhealthy NPU chip(s): " + ", ".join(f"{c.label} {c.health}" for c in severe),
            evidence,
            fix=health_fix + "\n(names the alarm; clear it or reset the chip before training on it, "
            "or leave it out with ASCEND_RT_VISIBLE_DEVICES)",
        )
    problems = [f"{c.label} health {c.health}" for c in sick]
    problems += [f"{c.label} has {c.memory_used} of {c.memory_total} MB in use" for c in busy]
    problems += [f"{len(info.processes)} process(es) run on the NPUs"] if info.processes else []
    if problems:
        return Outcome(
            "warn",
            "; ".join(problems),
            evidence,
            fix=(health_fix + "\n" if health_fix else "")
            + "pick free chips with ASCEND_RT_VISIBLE_DEVICES, or stop the jobs holding them",
        )
    return Outcome("ok", f"npu-smi: {len(info.chips)} chip(s) healthy, memory free", evidence)


def parse_visible(value: str) -> tuple[list[int], str]:
    """torch_npu's reading of ASCEND_RT_VISIBLE_DEVICES: the comma-separated indices up to
    the first other character (``torch_npu/npu/__init__.py``), and what was ignored."""
    cut = len(value)
    for i, ch in enumerate(value):
        if not (ch.isdigit() or ch == ","):
            cut = i
            break
    ids: list[int] = []
    for part in value[:cut].split(","):
        if not part:
            break
        ids.append(int(part))
    return ids, value[cut:]


@CHECKS.register("visible-devices", group=GROUP, order=20)
def visible(ctx: Context) -> Outcome:
    spec = ctx.environment.visible_devices
    var = spec.path
    cites = tuple(s.cite() for s in spec.extra["sources"])
    count = len(device_nodes(ctx)[0])
    if not count:
        return Outcome("skip", "no NPU device nodes to select from")
    value = ctx.env.get(var)
    others = {v: ctx.env[v] for v in spec.extra["not_for_npu"] if ctx.env.get(v) is not None}
    fix: str | None
    if value is None:
        if others:
            name, other = next(iter(others.items()))
            ids, rest = parse_visible(other)
            fix = (
                f"export {var}={','.join(map(str, sorted(set(ids))))}"
                if ids and not rest
                else f"export {var}=<device indices, ascending>"
            )
            return Outcome(
                "warn",
                f"{name} is set but selects no NPU; {var} is not set",
                [f"{name}={other}", f"all {count} NPU(s) are visible"],
                fix=fix,
                sources=cites,
            )
        return Outcome("ok", f"{var} not set: all {count} NPU(s) visible", sources=cites)
    evidence = [f"{var}={value!r}"] + [f"{k}={v} (ignored by the NPU runtime)" for k, v in others.items()]
    ids, rest = parse_visible(value)
    problems, status = [], "ok"
    if rest:
        problems.append(f"{rest!r} is ignored: only digits and commas are read")
        status = "warn"
    if not ids:
        return Outcome(
            "fail",
            f"{var} makes no NPU visible",
            evidence + problems,
            fix=f"export {var}=0 (or unset it)",
            sources=cites,
        )
    if any(b <= a for a, b in zip(ids, ids[1:])):
        problems.append("indices are not in strictly ascending order: torch.npu.is_available() returns False")
        status = "fail"
    if any(i >= count for i in ids):
        problems.append(
            f"index {max(ids)} is not below the {count} device(s) here (indices "
            "count the devices this host or container sees, from 0)"
        )
        status = "fail"
    good = sorted({i for i in ids if i < count}) or list(range(min(len(set(ids)), count)))
    fix = f"export {var}={','.join(map(str, good))}" if status != "ok" else None
    summary = {
        "ok": f"{var} selects {len(ids)} NPU(s)",
        "warn": f"{var} is partly ignored",
        "fail": f"{var} is not usable as set",
    }[status]
    return Outcome(status, summary, evidence + problems, fix=fix, sources=cites)


@CHECKS.register("device-holders", group=GROUP, order=30)
def holders(ctx: Context) -> Outcome:
    proc = ctx.layout.system("/proc")
    node = re.compile(ctx.environment.device_nodes.path)
    if not device_nodes(ctx)[0]:
        return Outcome("skip", "no NPU device nodes")
    cite = (ctx.errors.codes["EJ0001"].sources[0].cite(),)
    try:
        pids = [p for p in os.listdir(proc) if p.isdigit()][:MAX_PROCESSES]
    except OSError:
        return Outcome("skip", f"{ctx.show(proc)} cannot be read")
    me = {str(os.getpid())}
    held: dict[str, set[str]] = {}
    hidden = 0
    for pid in pids:
        if pid in me:
            continue
        fd_dir = proc / pid / "fd"
        try:
            fds = os.listdir(fd_dir)[:MAX_FDS]
        except OSError:
            hidden += 1
            continue
        for fd in fds:
            try:
                target = os.readlink(fd_dir / fd)
            except OSError:
                continue
            if node.fullmatch(target):
                held.setdefault(pid, set()).add(Path(target).name)
    notes = [f"{hidden} process(es) could not be inspected (other users)"] if hidden else []
    if not held:
        return Outcome("ok", "no other process holds an NPU", notes)
    evidence = [
        f"pid {pid} holds {', '.join(sorted(devs))}: {_cmdline(proc / pid)}"
        for pid, devs in sorted(held.items(), key=lambda kv: int(kv[0]))
    ][:16]
    pids_text = " ".join(sorted(held, key=int))
    return Outcome(
        "warn",
        f"{len(held)} other process(es) hold NPUs (a leftover run causes EJ0001 and out-of-memory errors)",
        evidence + notes,
        fix=f"stop them if they are leftovers (kill {pids_text}; wait 10 s), or pick "
        "free devices with ASCEND_RT_VISIBLE_DEVICES",
        sources=cite,
    )


def _kind(path: Path) -> str:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "a dangling link"
    if stat.S_ISREG(mode):
        return f"a regular file of {os.stat(path).st_size} bytes"
    return "a folder" if stat.S_ISDIR(mode) else "a block device, FIFO or socket"


def _cmdline(folder: Path) -> str:
    try:
        with open(folder / "cmdline", "rb") as f:
            raw = f.read(400)
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()[:200] or "?"
