"""Run by `migrate doctor` inside the target interpreter (``python -B -c <this file>``):
reads package metadata, never imports a package. Standard library only, Python 3.8+.

argv: the distribution names to describe. Prints one line ``@@MIGRATE-DOCTOR@@{json}``:
``python`` (version, executable, machine), ``markers`` (its PEP 508 environment), ``dists``
(name -> version, requires, entry points, location; torch also its ``torch/version.py`` text
and whether ``torch/__init__.py`` autoloads device backends), ``dependents`` (every
distribution that requires torch, with those requirements) and ``duplicates`` (names
installed twice on sys.path).
"""

import json
import os
import platform
import re
import sys

MARK = "@@MIGRATE-DOCTOR@@"
LIMIT = 4 << 20


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def head(path, limit):
    try:
        with open(str(path), "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def req_name(req):
    return normalize(re.split(r"[\s\[<>=!~;(@]", req.strip(), maxsplit=1)[0])


def markers():
    """The PEP 508 marker environment of this interpreter (what packaging computes)."""
    impl = sys.implementation
    version = "{}.{}.{}".format(*impl.version[:3])
    if impl.version.releaselevel != "final":
        version += impl.version.releaselevel[0] + str(impl.version.serial)
    return {
        "implementation_name": impl.name,
        "implementation_version": version,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "platform_python_implementation": platform.python_implementation(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    }


def describe(dist, key):
    info = {
        "name": dist.metadata["Name"],
        "version": dist.version,
        "requires": list(dist.requires or []),
        "entry_points": [[ep.group, ep.name, ep.value] for ep in dist.entry_points],
        "location": str(dist.locate_file("")),
    }
    if key == "torch":
        info["version_py"] = head(dist.locate_file("torch/version.py"), 65536)
        init = head(dist.locate_file("torch/__init__.py"), LIMIT) or ""
        info["autoload_hook"] = "_import_device_backends" in init
    return info


def main(names):
    out = {
        "python": {
            "version": platform.python_version(),
            "executable": sys.executable,
            "machine": platform.machine(),
            "prefix": sys.prefix,
        },
        "markers": markers(),
        "dists": {},
        "dependents": {},
        "duplicates": [],
    }
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8
        metadata = None  # type: ignore[assignment]  # then no dists are read
    if metadata is not None:
        wanted = {normalize(n) for n in names}
        for dist in metadata.distributions():  # in sys.path order: the first one is imported
            try:
                key = normalize(dist.metadata["Name"] or "")
                requires = list(dist.requires or [])
            except Exception:  # a broken dist-info: skip it
                continue
            on_torch = [r for r in requires if req_name(r) == "torch"]
            if on_torch and key != "torch" and key not in out["dependents"]:
                out["dependents"][key] = {"version": dist.version, "requires": on_torch}
            if key not in wanted:
                continue
            if key in out["dists"]:
                out["duplicates"].append(key)
                continue
            try:
                out["dists"][key] = describe(dist, key)
            except Exception as exc:
                out["dists"][key] = {"error": repr(exc)[:500]}
    sys.stdout.write("\n" + MARK + json.dumps(out) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
