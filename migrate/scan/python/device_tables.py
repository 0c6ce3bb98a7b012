"""A table keyed by device type gains the NPU's entry, a copy of CUDA's.

kornia's LightGlue looks its pruning threshold up by the device's type::

    pruning_keypoint_thresholds: ClassVar[Dict[str, Any]] = {
        "cpu": -1,
        "mps": -1,
        "cuda": 1024,
        "flash": 1536,
    }
    ...
    return self.pruning_keypoint_thresholds[device.type]

A port that runs the code on the NPU makes ``device.type`` ``"npu"``, and the lookup raises
KeyError. Engineers add the NPU's entry right after CUDA's, its value copied, laid out as the
others (``"npu": 1024,`` on a line of its own; ``, "npu": 2`` in a one-line dict), under every
target: transfer_to_npu patches no lookup. A dict is such a table where its keys are all
string constants, one of them ``"cuda"`` and another a device type of another device
(rules/device_types.yaml: ``cpu``, ``mps``, ``xpu`` ...), none the NPU's; CUDA's value is on
its key's line, with no call in it and no name of NVIDIA's stack (``torch.cuda.X``: a
person decides the NPU's), but for NCCL's name, whose NPU entry is HCCL's (timm #2109:
``"npu": "hccl"`` beside ``"cuda": "nccl"``). A second run finds the NPU's key and leaves it.
"""

from __future__ import annotations

import ast

from migrate.core.fileio import newline_of
from migrate.core.findings import Edit, fix_for
from migrate.scan.device_types import device_types
from migrate.scan.npu_names import CUDA_STACK

_CUDA = "cuda"
_NCCL, _HCCL = "nccl", "hccl"
_NOT_COPIED = (ast.Call, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.Starred)


def table_key(f, table: ast.Dict, new: str) -> ast.Constant | None:
    """The ``"cuda"`` key of ``table`` where it is a table keyed by device type that has
    no ``new`` entry and whose CUDA value can be copied; else None."""
    keys = table.keys
    if not keys or not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in keys):
        return None
    names = [k.value for k in keys if isinstance(k, ast.Constant)]
    if names.count(_CUDA) != 1 or new in names:
        return None
    if not (set(names) & device_types().types) - {_CUDA, new}:
        return None  # {"cuda": 1, "flash": 2}: no other device named, not a device table
    i = names.index(_CUDA)
    key, value = keys[i], table.values[i]
    if key is None or value.end_lineno != key.lineno or f.source(key) not in ('"cuda"', "'cuda'"):
        return None
    if any(isinstance(n, _NOT_COPIED) for n in ast.walk(value)):
        return None
    if CUDA_STACK.search(f.source(value)) and _backend(value) is None:
        return None
    return key if isinstance(key, ast.Constant) else None


def _backend(value: ast.expr) -> str | None:
    """The NPU's collective backend where CUDA's value is NCCL's name (timm's
    ``dist_backends = {"xpu": "ccl", "hpu": "hccl", "cuda": "nccl"}``), else None."""
    if isinstance(value, ast.Constant) and value.value == _NCCL:
        return _HCCL
    return None


def table_keys(f, new: str) -> set[int]:
    """The offsets of the ``"cuda"`` keys of the file's device tables."""
    keys = (table_key(f, d, new) for d in f.nodes(ast.Dict))
    return {f.span(k)[0] for k in keys if k is not None}


def report_table(f, spec, table: ast.Dict) -> None:
    """Report the ``"cuda"`` key of ``table`` if it is a device table, fixed by the NPU's
    entry after CUDA's (every target)."""
    new = _CUDA
    for pattern, repl in spec.replace:
        new = pattern.sub(repl, new)
    key = table_key(f, table, new) if new != _CUDA else None
    if key is None:
        return
    edit, entry = _entry(f, table, key, new)
    values = {"value": _CUDA, "new": new}
    fix = None
    if edit is not None:
        prefix = "Portable: " if f.target == "portable" else ""
        what = f"{prefix}add `{entry}` after CUDA's entry"
        fix = fix_for(spec.rule, [edit], values, description=what)
    f.report(spec.rule, *f.span(key), values, fix)


def _entry(f, table: ast.Dict, key: ast.Constant, new: str) -> tuple[Edit | None, str]:
    """The edit adding ``new``'s entry after the one of ``key``, and the entry; no edit where
    the layout is not plain (parentheses or a comment between CUDA's value and its comma)."""
    value = table.values[table.keys.index(key)]
    (ka, kb), (va, vb) = f.span(key), f.span(value)
    copied = f.text[va:vb].replace(_NCCL, _HCCL) if _backend(value) else f.text[va:vb]
    entry = f.text[ka:kb].replace(_CUDA, new, 1) + f.text[kb:va] + copied
    following = [k for k in table.keys if k is not None and f.span(k)[0] > vb]
    stop = f.span(following[0])[0] if following else f.span(table)[1] - 1
    comma = f.text.find(",", vb, stop)
    between = f.text[vb:comma] if comma >= 0 else f.text[vb:stop].split("#")[0]
    if between.strip():
        return None, entry  # parentheses around the value, or a comment before the comma
    line_end = f.text.find("\n", vb)
    line_end = len(f.text) if line_end < 0 else line_end
    indent = f.text[f.text.rfind("\n", 0, ka) + 1 : ka]
    own_line = not indent.strip() and "\n" in f.text[vb : f.span(table)[1]]
    nl = newline_of(f.text)
    if own_line and comma >= 0:
        rest = f.text[comma + 1 : line_end].strip()
        if not rest or rest.startswith("#"):  # "cuda": 1024,  (a comment after it kept)
            return Edit(line_end + 1, line_end + 1, f"{indent}{entry},{nl}"), entry
    elif own_line:  # CUDA's the last entry, no comma after it
        if f.text[vb:line_end].strip():
            return None, entry  # a comment after CUDA's value
        return Edit(vb, vb, f",{nl}{indent}{entry}"), entry
    return Edit(vb, vb, f", {entry}"), entry
