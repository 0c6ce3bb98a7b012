"""Whether an NPU twin may copy a call whose NPU counterpart returns another object.

``torch.npu.get_device_properties`` returns an object with fewer fields than CUDA's
(rules/torch_cuda.yaml MIG104 ``fields``, from tools/cuda_rules_notes.yaml). A CUDA arm
that reads only fields the NPU's object has (ChatTTS's ``props.total_memory``) reads the
same from the copy, so the copy may hold the call; one that reads another field
(``props.major``), passes the object on, or keeps it past the function may not.
"""

from __future__ import annotations

import ast
from functools import cache

from migrate.core.rules import default_rules


@cache
def npu_fields() -> dict[str, frozenset[str]]:
    """Qualified name -> the fields its NPU counterpart's result has."""
    out: dict[str, frozenset[str]] = {}
    for rule in default_rules():
        for name, fields in (rule.params.get("fields") or {}).items():
            out[str(name)] = frozenset(str(x) for x in fields)
    return out


def read_fields_only(f, body: list[ast.stmt], findings: list) -> bool:
    """Whether each of ``findings`` is a call of a name with known NPU fields, same-named on
    the NPU, whose result the function reads only for those fields."""
    table = npu_fields()
    calls = {(c.lineno, c.col_offset + 1): c for s in body for c in ast.walk(s) if isinstance(c, ast.Call)}
    for x in findings:
        fields = table.get(x.symbol)
        call = calls.get((x.line, x.column))
        if fields is None or call is None or not _reads_only(f, call, fields):
            return False
    return True


def _reads_only(f, call: ast.Call, fields: frozenset[str]) -> bool:
    parent = f.parent(call)
    if isinstance(parent, ast.Attribute):
        return parent.attr in fields
    if not (
        isinstance(parent, ast.Assign)
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
    ):
        return False
    name = parent.targets[0].id
    scope = f.parent(parent)
    while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        scope = f.parent(scope)
    if scope is None:
        return False  # a module-level name: other modules may read it
    for node in ast.walk(scope):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            holder = f.parent(node)
            if not (isinstance(holder, ast.Attribute) and holder.attr in fields):
                return False
    return True
