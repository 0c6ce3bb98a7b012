"""Which sparse-tensor kernels does a torch_npu wheel register? Read from its shipped binary.

torch_npu generates its SparseNPU / SparseCsrNPU kernel wrappers (``wrap_SparseNPU_mm_``,
``wrapper_SparseNPU_out_add_out``) from op_plugin YAML that the wheel does not ship, in an
anonymous namespace, so they are not in ``libtorch_npu.so``'s dynamic symbol table. Each
wrapper registered with ``m.impl(name, TORCH_FN(wrapper))`` instantiates one c10 kernel
functor type (``c10::impl::detail::WrapFunctionIntoFunctor_<CompileTimeFunctionPointer<...,
&wrapper>>``), whose RTTI type name -- an Itanium-mangled string in the library's read-only
data -- spells the wrapper's name with its exact length. Those names are read here from the
``.rodata*`` sections (a minimal ELF64 section-table reader, no binutils) and mapped to ATen
overloads through torchgen's ``native_functions.yaml``:

* ``wrap_<Key>_<name>_<overload>`` (op_plugin's codegen; ``_<overload>`` empty for the
  default overload): ``wrap_SparseNPU_mm_`` is ``mm``, ``wrap_SparseNPU_add__Tensor`` is
  ``add_.Tensor``;
* ``wrapper_<Key>_<overload>_<name>[_<overload>]`` (torchgen's RegisterDispatchKey):
  ``wrapper_SparseNPU_out_add_out`` is ``add.out``, ``wrapper_SparseNPU___coalesce`` is
  ``_coalesce``.

A name that splits into no known overload (an op newer than the torch torchgen comes from)
is kept as ``unresolved``.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

# torch_npu's name of a key -> the dispatcher's key and the tensor layouts dispatched to it.
SPARSE_KEYS = {
    "SparseNPU": ("SparsePrivateUse1", ["sparse_coo"]),
    "SparseCsrNPU": ("SparseCsrPrivateUse1", ["sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"]),
}
# The anonymous namespace (``_GLOBAL__N_1``) ends with a digit, so the wrapper's length is
# read after it; the wrapper's own name is exactly that many characters.
_WRAPPER = re.compile(rb"_GLOBAL__N_1(\d+)(wrap(?:per)?_(" + "|".join(SPARSE_KEYS).encode() + rb")_)")


def rodata(image: bytes) -> list[bytes]:
    """The contents of an ELF64 little-endian file's ``.rodata*`` sections."""
    if image[:4] != b"\x7fELF" or image[4] != 2 or image[5] != 1:
        raise ValueError("not a little-endian ELF64 file")
    (shoff,) = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", image, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", image, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]  # sh_offset of the section-name table
    out = []
    for name, _type, _flags, _addr, offset, size in headers:
        end = image.index(b"\0", names_at + name)
        if image[names_at + name : end].startswith(b".rodata"):
            out.append(image[offset : offset + size])
    return out


def wrappers(image: bytes) -> dict[str, set[str]]:
    """torch_npu key name -> the kernel wrapper names registered for it."""
    found: dict[str, set[str]] = {key: set() for key in SPARSE_KEYS}
    for data in rodata(image):
        for m in _WRAPPER.finditer(data):
            start = m.start(2)
            found[m.group(3).decode()].add(data[start : start + int(m.group(1))].decode())
    return found


def known_overloads() -> set[str]:
    """ATen overload keys ('add.Tensor', 'mm') of the installed torch's torchgen data."""
    import torchgen
    import yaml

    path = Path(torchgen.__file__).parent / "packaged/ATen/native/native_functions.yaml"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    entries = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    return {entry["func"].split("(", 1)[0] for entry in entries}


def overload_of(wrapper: str, key: str, known: set[str]) -> str | None:
    """The ATen overload a wrapper name stands for (None when no split is a known one)."""
    if wrapper.startswith(f"wrapper_{key}_"):
        rest = wrapper[len(f"wrapper_{key}_") :]
        for i, ch in enumerate(rest):
            if ch != "_":
                continue
            overload, uname = rest[:i], rest[i + 1 :]
            name = uname[: -len(overload) - 1] if overload else uname
            if overload and not uname.endswith(f"_{overload}"):
                continue
            got = f"{name}.{overload}" if overload else name
            if got in known:
                return got
        return None
    rest = wrapper[len(f"wrap_{key}_") :]
    for i in range(len(rest) - 1, 0, -1):  # the longest name first: 'abs__' is abs_ (default)
        if rest[i] == "_":
            name, overload = rest[:i], rest[i + 1 :]
            got = f"{name}.{overload}" if overload else name
            if got in known:
                return got
    return None


def sparse_kernels(binary: bytes, known: set[str] | None = None) -> dict[str, dict]:
    """Per torch_npu key: the dispatcher key, layouts, overloads with a kernel, unresolved."""
    known = known_overloads() if known is None else known
    out: dict[str, dict] = {}
    for key, names in wrappers(binary).items():
        resolved = {n: overload_of(n, key, known) for n in names}
        overloads = sorted({o for o in resolved.values() if o})
        out[key] = {
            "dispatch_key": SPARSE_KEYS[key][0],
            "layouts": SPARSE_KEYS[key][1],
            "wrappers": len(names),
            "count": len(overloads),
            "overloads": overloads,
            "unresolved": sorted(n for n, o in resolved.items() if o is None),
        }
    return out
