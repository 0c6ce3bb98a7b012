"""Spelling portable rewrites in one file: the file's name for torch, quotes that fit."""

from __future__ import annotations

import re

from migrate.core.targets import expand

_TORCH = re.compile(r"(?<![\w.])torch\b")


def spell(f, template: str, quote: str = '"', **values: str) -> tuple[str, list[str]]:
    """(code, imports needed): ``template`` expanded, ``torch.`` spelled as the file binds
    it (``import torch as th``), string quotes switched to ``quote`` (inside f-strings)."""
    code = expand(template, **values)
    dist = f.bindings.local_for("torch.distributed")
    if dist and dist != "torch.distributed":  # `import torch.distributed as dist`
        code = re.sub(r"(?<![\w.])torch\.distributed\b", "@DIST@", code)
    local = f.bindings.local_for("torch")
    imports: list[str] = []
    if local is None:
        local = "torch"
        imports.append("import torch")
    if local != "torch":
        code = _TORCH.sub(local, code)
    code = code.replace("@DIST@", dist or "torch.distributed")
    if "torch" not in code.replace(dist or "@", ""):
        imports = [i for i in imports if i != "import torch"]
    if quote == "'":
        code = code.replace('"', "'")
    return code, imports


def chain_form(f, qualname: str) -> str:
    """In code (not imports) torch_npu.npu[.x] reads torch.npu[.x] where `torch` is bound:
    torch_npu registers torch.npu as that very module, so attribute access is the same."""
    if (qualname == "torch_npu.npu" or qualname.startswith("torch_npu.npu.")) and \
            f.bindings.local_for("torch") is not None:
        return "torch" + qualname[len("torch_npu"):]
    return qualname


def enclosing(f, node, *types):
    """The nearest ancestor of one of ``types``, or None."""
    cur = f.parent(node)
    while cur is not None and not isinstance(cur, types):
        cur = f.parent(cur)
    return cur


_PREFIX = re.compile(r"""[rRbBfFuU]*('''|\"\"\"|'|")""")


def quote_for(f, node) -> str:
    """The quote new string literals need at ``node``: inside an f-string, the other one."""
    import ast

    outer = enclosing(f, node, ast.JoinedStr)
    if outer is None:
        return '"'
    m = _PREFIX.match(f.source(outer))
    return "'" if m and m.group(1)[0] == '"' else '"'
