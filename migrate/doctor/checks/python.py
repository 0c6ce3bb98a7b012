"""Python, torch and torch_npu in the target interpreter: installed, which build, which pins,
whether ``import torch`` loads torch_npu, and whether the import really works."""

from __future__ import annotations

from migrate.doctor import pins
from migrate.doctor.checks import CHECKS
from migrate.doctor.context import Context, normalize
from migrate.doctor.explain import explain_text
from migrate.doctor.report import Outcome

GROUP = "python"


@CHECKS.register("python", group=GROUP, order=10)
def python(ctx: Context) -> Outcome:
    if ctx.meta is None:
        return Outcome(
            "fail",
            f"cannot ask {ctx.options.python}",
            [ctx.meta_error or "no answer"],
            fix="pass the interpreter that runs the training with --python PATH",
        )
    py = ctx.python
    evidence = [f"executable: {py.get('executable')}", f"machine: {py.get('machine')}"]
    dups = (ctx.meta or {}).get("duplicates") or []
    if dups:
        evidence.append(
            f"installed twice on sys.path (the first one is imported): {', '.join(sorted(set(dups)))}"
        )
    return Outcome("warn" if dups else "ok", f"Python {py.get('version')}", evidence)


@CHECKS.register("torch", group=GROUP, order=20)
def torch(ctx: Context) -> Outcome:
    if ctx.meta is None:
        return Outcome("skip", "the interpreter could not be asked")
    if ctx.torch is None:
        pin = pins.target(ctx)
        row = ctx.compat.release(pin.torch_npu)
        return Outcome(
            "fail",
            "torch is not installed",
            fix=pin.lines(ctx.arch, True, ctx.torch_npu is None),
            sources=(row.source.cite(),) if row else (),
        )
    build = ctx.build
    assert build is not None
    evidence = [f"version: {ctx.torch.version_text} ({build.detail})", f"location: {ctx.torch.location}"]
    summary = f"torch {ctx.torch.version_text}, {build.detail} build"
    if build.is_cpu:
        return Outcome("ok", summary, evidence)
    if build.kind == "unknown":
        return Outcome("warn", summary, evidence)
    # A CUDA, ROCm or XPU build: torch_npu checks the accelerator at import and refuses.
    when = "refuses" if ctx.torch_npu else "will refuse, once installed,"
    evidence.append(f'torch_npu {when} to load beside it: "Two accelerators cannot be used at the same time"')
    return Outcome(
        "fail",
        summary + ": torch_npu needs the CPU build",
        evidence,
        fix=pins.torch_line(pins.target(ctx).torch, ctx.arch),
        sources=(ctx.environment.cite("torch-npu-init"),),
    )


@CHECKS.register("torch-npu", group=GROUP, order=30)
def torch_npu(ctx: Context) -> Outcome:
    if ctx.meta is None:
        return Outcome("skip", "the interpreter could not be asked")
    if ctx.torch_npu is None:
        torch_version = ctx.torch.version if ctx.torch else None
        pin = pins.target(ctx)
        row = ctx.compat.release(pin.torch_npu)
        same = torch_version is not None and pin.torch.release[:3] == torch_version.release[:3]
        # the torch line too when the installed torch is not the one to have, or not a CPU build
        fix = pin.lines(ctx.arch, not same or not (ctx.build and ctx.build.is_cpu), True)
        evidence = (
            []
            if same
            else [
                f"no torch_npu release is published for torch {ctx.torch.version_text}"
                if ctx.torch
                else "torch is not installed either"
            ]
        )
        return Outcome(
            "fail",
            "torch_npu is not installed",
            evidence,
            fix=fix,
            sources=(row.source.cite(),) if row else (),
        )
    want = ctx.torch_npu_requires()
    evidence = [
        f"location: {ctx.torch_npu.location}",
        f"requires: torch{want}" if want else "requires: no torch pin in its metadata",
    ]
    return Outcome("ok", f"torch_npu {ctx.torch_npu.version_text}", evidence)


@CHECKS.register("torch-pin", group=GROUP, order=40)
def torch_pin(ctx: Context) -> Outcome:
    if ctx.torch is None or ctx.torch_npu is None or ctx.torch.version is None:
        return Outcome("skip", "needs torch and torch_npu installed")
    want = ctx.torch_npu_requires()
    if want is None:
        return Outcome(
            "warn",
            f"torch_npu {ctx.torch_npu.version_text} declares no torch requirement",
            ["its metadata has no Requires-Dist on torch: the pair cannot be checked"],
        )
    have = ctx.torch.version
    if want.contains(have, prereleases=True):
        blocked = pins.blocked_dependents(ctx, have)
        if blocked:
            return Outcome(
                "warn",
                f"torch {ctx.torch.version_text} fits torch_npu (torch{want}), but "
                "other packages pin another torch",
                blocked,
                fix=f"reinstall builds of these for torch {ctx.torch.version_text}: " + "; ".join(blocked),
            )
        return Outcome(
            "ok",
            f"torch {ctx.torch.version_text} fits torch_npu {ctx.torch_npu.version_text} (torch{want})",
        )
    pin = pins.target(ctx)
    row = ctx.compat.release(ctx.torch_npu.version) if ctx.torch_npu.version else None
    evidence = [
        f"torch_npu {ctx.torch_npu.version_text} requires torch{want}",
        f"installed: torch {ctx.torch.version_text}",
        "a mismatched pair fails at import with 'libtorch_npu.so: undefined symbol: _ZN3c10...'",
    ]
    return Outcome(
        "fail",
        f"torch {ctx.torch.version_text} does not fit torch_npu {ctx.torch_npu.version_text} (torch{want})",
        evidence,
        fix=pin.lines(ctx.arch, True, False),
        sources=(row.source.cite(),) if row else (),
    )


@CHECKS.register("autoload", group=GROUP, order=50)
def autoload(ctx: Context) -> Outcome:
    if ctx.torch is None or ctx.torch_npu is None:
        return Outcome("skip", "needs torch and torch_npu installed")
    switch = ctx.environment.autoload_switch
    entry = [ep for ep in ctx.torch_npu.entry_points if ep[0] == "torch.backends"]
    hook = bool(ctx.torch.raw.get("autoload_hook"))
    cites = tuple(s.cite() for s in switch.extra["sources"])
    point = f"[torch.backends] {entry[0][1]} = {entry[0][2]}" if entry else "none"
    evidence = [
        f"torch_npu entry point: {point}",
        f"torch loads device backends at import: {'yes' if hook else 'no'}",
    ]
    if not entry or not hook:
        return Outcome(
            "warn",
            "import torch does not load torch_npu",
            evidence,
            fix="add `import torch_npu` after `import torch` in the entry points "
            "(torch_npu >= 2.5 with torch >= 2.5 loads itself)",
            sources=cites,
        )
    value = ctx.env.get(switch.path)
    if value == switch.extra["disabled_by"]:
        evidence.append(f"{switch.path}={value} switches it off in this environment")
        return Outcome(
            "warn",
            "autoloading is switched off",
            evidence,
            fix=f"unset {switch.path} (or import torch_npu explicitly)",
            sources=cites,
        )
    return Outcome(
        "ok",
        "import torch loads torch_npu (torch.npu exists without importing torch_npu)",
        evidence,
        sources=cites,
    )


@CHECKS.register("cann-python-deps", group=GROUP, order=55)
def cann_python_deps(ctx: Context) -> Outcome:
    """The Python packages CANN's operator compiler imports, in the interpreter of the job."""
    if ctx.meta is None:
        return Outcome("skip", "the interpreter could not be asked")
    spec = ctx.environment.cann_python_deps
    cites = tuple(s.cite() for s in spec.extra["sources"])
    missing = [str(name) for name in spec.extra["packages"] if ctx.dist(normalize(str(name))) is None]
    if not missing:
        return Outcome(
            "ok",
            "the Python packages CANN compiles operators with are installed",
            sources=cites,
        )
    return Outcome(
        "warn",
        f"not installed in this interpreter: {', '.join(missing)}",
        ["CANN's operator compiler imports them when the first operator runs (EH9999 / E40020 otherwise)"],
        fix="pip install " + " ".join(missing),
        sources=cites,
    )


@CHECKS.register("import", group=GROUP, order=60)
def import_probe(ctx: Context) -> Outcome:
    if not ctx.options.import_probe:
        return Outcome("skip", "not run (--no-import)")
    if ctx.torch is None or ctx.torch_npu is None:
        return Outcome("skip", "needs torch and torch_npu installed")
    facts = ctx.imported
    if facts is None:
        return Outcome("skip", "the interpreter could not be run")
    ran, res = facts.ran, facts.result

    def fail(summary: str, fix: str) -> Outcome:
        return Outcome("fail", summary, evidence, fix=fix)

    evidence = [f"ran `import torch; import torch_npu; torch.npu.is_available()` in {ran.seconds:.1f} s"]
    if ran.timed_out:
        evidence += _explained(ctx, ran.stderr + "\n" + facts.log_text)
        return fail(
            f"the import hung for {ctx.options.timeout:g} s and was stopped",
            "look for processes holding the devices (device-holders below) and "
            "check the driver; raise --timeout if the machine is just slow",
        )
    if res is None:
        evidence.append(f"the interpreter died (exit status {ran.returncode})")
        evidence += _explained(ctx, ran.stderr + "\n" + facts.log_text)
        return fail(
            "importing torch / torch_npu crashed",
            "see the explanations above; migrate doctor --explain CODE for a code",
        )
    if res.get("error"):
        evidence.append(f"{res.get('stage')}: {str(res['error']).splitlines()[0][:300]}")
        evidence += _explained(ctx, str(res["error"]) + "\n" + ran.stderr + "\n" + facts.log_text)
        return fail(
            f"{res.get('stage')} failed", "fix what the explanations name, then run migrate doctor again"
        )
    evidence.append(f"import torch loaded torch_npu: {'yes' if res.get('autoloaded') else 'no'}")
    evidence.append(f"torch.npu.device_count(): {res.get('device_count')}")
    if not res.get("available"):
        evidence += _explained(ctx, ran.stderr + "\n" + facts.log_text)
        return fail(
            "torch_npu imports, but torch.npu.is_available() is False",
            "see the devices checks below (device nodes, visible devices, driver)",
        )
    return Outcome(
        "ok",
        f"torch_npu {res.get('torch_npu')} imports; {res.get('device_count')} NPU(s) available",
        evidence,
    )


def _explained(ctx: Context, text: str) -> list[str]:
    """One evidence line per error code or known message found in ``text``."""
    return [f"{hit}" for hit in explain_text(text, ctx.errors)][:8]
