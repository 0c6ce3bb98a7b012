"""Device helpers and NPU arms in a package's files: which files may define them (found
without parsing), and one helper per kind chosen from those found (migrate/scan/helper_finder.py
decides from the code what each one is), with the packages that re-export it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from migrate.scan.npu_names import may_name_npu, names_npu
from migrate.scan.project.file_devices import HelperRef
from migrate.scan.project.reading import _read

# a file worth parsing for helpers names the NPU (migrate/scan/npu_names.py), the
# accelerator or a device module
_CANDIDATE_TOKENS = (b"accelerator", b"get_device_module", b"privateuse1")


_DEF_NAME = re.compile(r"^\s*(?:class|def)\s+(\w+)", re.MULTILINE)


def _candidate(data: bytes) -> bool:
    """Whether a file may define a device helper or an NPU arm: it names the NPU, the
    accelerator or a device module."""
    lowered = data.lower()
    if any(token in lowered for token in _CANDIDATE_TOKENS):
        return True
    # names_npu's own substring test, on the bytes already lowered: most files stop here
    return may_name_npu(lowered) and names_npu(data)


def _npu_arm_names(text: str) -> set[str]:
    """Names of the classes and functions ``text`` defines that name the NPU."""
    return {m.group(1) for m in _DEF_NAME.finditer(text) if names_npu(m.group(1))}


def _names_in(name: str, words: tuple[str, ...]) -> tuple[str, ...]:
    """The ``words`` the file ``name`` names (as whole words)."""
    data = _read(Path(name))
    if data is None:
        return ()
    text = data.decode("utf-8", "replace")
    return tuple(w for w in words if re.search(rf"\b{re.escape(w)}\b", text))


# a top-level def and its parameters (to the first ")": a default holding a call ends the
# match early, and the function still counts as callable without arguments)
_TOP_DEF = re.compile(rb"^def[ \t]+\w+[ \t]*\(([^)]*)\)", re.MULTILINE)


def _may_define_helper(data: bytes) -> bool:
    """Whether a file may define a device helper: a top-level function callable without
    arguments (helper_finder takes no other), found without parsing the file."""
    for m in _TOP_DEF.finditer(data):
        params = [p.strip() for p in _COMMENT.sub(b"", m.group(1)).split(b",")]
        if all(not p or b"=" in p or p.startswith(b"*") or p == b"/" for p in params):
            return True
    return False


_COMMENT = re.compile(rb"#[^\n]*")


def _choose(found: list[HelperRef], files_naming) -> tuple[HelperRef, ...]:
    """One helper per kind: the port's own where present, else the most used (the one most
    files name: ``files_naming(names)`` counts them, asked only where a kind has a choice),
    then the one in the shallowest module."""
    by_kind: dict[str, list[HelperRef]] = {}
    for ref in found:
        if ref.kind == "device" or (ref.name.startswith("_") and not ref.ours):
            continue  # a torch.device maker reads worse than a type helper; private ones stay private
        by_kind.setdefault(ref.kind, []).append(ref)
    contested = tuple(sorted({r.name for refs in by_kind.values() if len(refs) > 1 for r in refs}))
    uses = files_naming(contested) if contested else {}
    chosen = []
    for _kind, refs in sorted(by_kind.items()):

        def rank(r: HelperRef):
            return (not r.ours, not r.call, -uses.get(r.name, 0), r.module.count("."), r.module, r.name)

        chosen.append(min(refs, key=rank))
    return tuple(chosen)


def _public(ref: HelperRef, inits: dict[str, str]) -> HelperRef:
    """The helper with the packages that export it (torchtune.utils re-exports
    torchtune.utils._device.get_torch_device_namespace), shallowest first."""
    if not ref.call:
        return ref
    parts = ref.module.split(".")
    publics = []
    for i in range(1, len(parts)):
        pkg = ".".join(parts[:i])
        text = inits.get(pkg, "")
        if re.search(
            rf"^[ \t]*from[ \t]+\S+[ \t]+import[^\n]*\b{re.escape(ref.name)}\b", text, re.MULTILINE
        ) or re.search(
            rf"^[ \t]*from[ \t]+\S+[ \t]+import[ \t]*\((?:[^)]*?)\b{re.escape(ref.name)}\b",
            text,
            re.MULTILINE,
        ):
            publics.append(pkg)
    return HelperRef(ref.kind, ref.module, ref.name, ref.call, ref.ours, tuple(publics))


def _torch_local(tree: ast.Module) -> str:
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "torch":
                    return a.asname or "torch"
    return "torch"
