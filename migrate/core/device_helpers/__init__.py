"""The device helpers a portable port adds where a project has none of its own.

``template.py`` beside this file is the helper module exactly as `migrate apply` writes it
into a package (``<package>/_device.py``); a script gets the functions it needs defined in
the file itself. The tool never imports the template (it needs torch): it reads it as text.
Tests import it to prove it behaves as the original code on CPU and old torch, and reaches
the NPU under emulation.

Each helper has a *kind*, the question it answers:

* ``type``    — the device type to use where the code said "cuda" ("cuda", "npu" or "cpu");
* ``module``  — the torch module to call where the code said ``torch.cuda``;
* ``amp``     — the device type for autocast / GradScaler ("cuda" off the accelerator, so
  they stay disabled on CPU as before);
* ``backend`` — the collective backend where the code said "nccl";
* ``check``   — whether an Ascend NPU is the host's accelerator: a script's one helper, the
  NPU side of each device decision spelled around it (``"npu" if is_npu_available() else
  "cuda"``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable
from functools import cache
from importlib import resources

# kind -> the template's function answering it
NAMES = {
    "type": "get_device_type",
    "module": "get_device_module",
    "amp": "get_amp_device_type",
    "backend": "get_dist_backend",
    "check": "is_npu_available",
}
KINDS = {name: kind for kind, name in NAMES.items()}
MODULE_NAME = "_device"  # the module added to a package: <package>/_device.py


def module_text(type_from: tuple[str, str] | None = None, names: Iterable[str] | None = None) -> str:
    """The helper module as it is written into a package. ``type_from`` (module, name): the
    project's own type helper, which the module then imports as ``get_device_type`` instead
    of defining its own (one helper family per project). ``names``: only these helpers
    (and what they call), as an engineer adds the one function the port needs; None: the
    whole template."""
    if names is None:
        return _module_text(type_from)
    return _partial_module(type_from, tuple(sorted(set(names))))


@cache
def _partial_module(type_from: tuple[str, str] | None, names: tuple[str, ...]) -> str:
    wanted = needed_names(names)
    doc = ast.get_docstring(ast.parse(_module_text()), clean=False) or ""
    head = f'"""{doc.splitlines()[0]}"""\n' if doc else ""
    defined = [n for n in wanted if not (type_from and n == NAMES["type"])]
    code = definitions(defined, callees=False) if defined else ""
    lines = []
    if re.search(r"(?<![\w.])torch\.", code):
        lines.append("import torch")
    if type_from is not None and NAMES["type"] in wanted:
        module, name = type_from
        alias = f"{name} as {NAMES['type']}" if name != NAMES["type"] else name
        lines.append(f"from {module} import {alias}")
    text = head + ("\n" if head and lines else "") + "\n".join(lines) + ("\n" if lines else "")
    return text + ("\n\n" + code if code else "")


def needed_names(names: Iterable[str]) -> list[str]:
    """``names`` and the template functions they call, in template order."""
    wanted: list[str] = []
    for name in names:
        wanted += [n for n in depends(name) if n not in wanted]
    order = list(_functions())
    return sorted(wanted, key=order.index)


@cache
def _module_text(type_from: tuple[str, str] | None = None) -> str:
    text = resources.files(__package__).joinpath("template.py").read_text(encoding="utf-8")
    if type_from is None:
        return text
    module, name = type_from
    tree = ast.parse(text)
    own = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == NAMES["type"])
    lines = text.splitlines(keepends=True)
    start = own.lineno - 1
    end = own.end_lineno or own.lineno
    while end < len(lines) and not lines[end].strip():
        end += 1
    alias = f"{name} as {NAMES['type']}" if name != NAMES["type"] else name
    # the project's import in its own block after `import torch`, as isort places first-party code
    body = "".join(lines[:start]).rstrip("\n") + f"\n\nfrom {module} import {alias}\n\n\n"
    return body + "".join(lines[end:])


@cache
def _functions() -> dict[str, tuple[str, str]]:
    """Template function name -> (source, normalised ast dump)."""
    text = _module_text()
    tree = ast.parse(text)
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = (ast.get_source_segment(text, node) or "", _shape(node, "torch"))
    missing = set(NAMES.values()) - set(out)
    if missing:
        raise RuntimeError(f"device helper template lacks {sorted(missing)}")
    return out


def depends(name: str) -> list[str]:
    """``name`` and the template functions it calls, callees first, in template order."""
    source = _functions()[name][0]
    called = {n for n in _functions() if n != name and re.search(rf"\b{n}\(", source)}
    order = list(_functions())
    needed: list[str] = []
    for callee in sorted(called, key=order.index):
        needed += [n for n in depends(callee) if n not in needed]
    return [*needed, name]


def definitions(names: list[str], torch_local: str = "torch", callees: bool = True) -> str:
    """Source of the template functions ``names`` (and what they call, unless not
    ``callees``), in template order, separated as a formatter separates top-level
    functions; ``torch`` spelled ``torch_local``."""
    wanted: list[str] = []
    for name in names:
        wanted += [n for n in (depends(name) if callees else [name]) if n not in wanted]
    order = list(_functions())
    blocks = [_functions()[n][0] for n in sorted(wanted, key=order.index)]
    code = "\n\n\n".join(blocks) + "\n"
    return rename_torch(code, torch_local)


def rename_torch(code: str, torch_local: str) -> str:
    """``code`` with the name ``torch`` (not in strings or comments) spelled ``torch_local``."""
    if torch_local == "torch":
        return code
    out, pos = [], 0
    lines = code.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.NAME and tok.string == "torch":
            at = starts[tok.start[0] - 1] + tok.start[1]
            out += [code[pos:at], torch_local]
            pos = at + len("torch")
    return "".join(out) + code[pos:]


def recognise(node: ast.AST, torch_local: str = "torch") -> str | None:
    """The kind of a function that is one of the template's helpers as written (``torch``
    bound as ``torch_local``), else None: the tool knows its own output."""
    if not isinstance(node, ast.FunctionDef) or node.name not in KINDS:
        return None
    if _functions()[node.name][1] == _shape(node, torch_local):
        return KINDS[node.name]
    return None


def _shape(node: ast.FunctionDef, torch_local: str) -> str:
    """An ast dump of the function without its docstring, ``torch_local`` read as torch."""
    body = (
        node.body[1:]
        if (node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant))
        else node.body
    )
    dump = ast.dump(ast.Module(body=body, type_ignores=[]))
    if torch_local != "torch":
        dump = dump.replace(f"Name(id='{torch_local}'", "Name(id='torch'")
    return dump
