"""--target transfer: torch_npu's transfer_to_npu patches torch.cuda, device strings passed to
torch, `.cuda()` and the NCCL backend at run time. Rules whose row says ``transfer: patched``
are then left as written (reported as handled, no effort) — except comparisons, which no
patch can reach (``x.device.type == "cuda"`` is False on an NPU). Entry points (a
``__main__`` block, a package's ``__main__.py``, a script whose work runs at module level, as
torchrun scripts often are) get the import once.
"""

from __future__ import annotations

import ast
import re

from migrate.core.findings import Edit, Finding, fix_for
from migrate.core.import_placement import anchor_offset

IMPORT = "from torch_npu.contrib import transfer_to_npu  # noqa: F401"
ENTRY_RULE = "MIG206"


def settle(f, findings: list[Finding], rules) -> list[Finding]:
    """``findings`` with what transfer_to_npu patches marked as handled (new findings)."""
    return [_settled(f, x, rules.get(x.rule)) for x in findings]


def _settled(f, x: Finding, rule) -> Finding:
    if rule is None or rule.transfer != "patched" or x.npu_aware:
        return x
    start = f.index.offset(x.line, x.column - 1)
    if rule.kind == "context-string" and _in_compare(f, start):
        return x  # x.device.type == "cuda": no patch reaches a string comparison
    return x.left_as_is("transfer_to_npu patches it at run time: left as is")


def _in_compare(f, offset: int) -> bool:
    for node in f.nodes(ast.Compare):
        a, b = f.span(node)
        if a <= offset < b:
            return True
    return False


def is_entry_point(f) -> bool:
    """A script: a top-level ``if __name__ == "__main__":`` block, a package's __main__.py, or
    a script body that runs at module level (torchrun scripts without a ``__main__`` block:
    ``main()``, ``args = parser.parse_args()``, a training loop at the top level)."""
    if f.rel.rsplit("/", 1)[-1] == "__main__.py":
        return True
    if any(
        isinstance(node, ast.If) and re.search(r"__name__\s*==\s*['\"]__main__['\"]", f.source(node.test))
        for node in f.tree.body
    ):
        return True
    return f.rel.rsplit("/", 1)[-1] != "__init__.py" and _script_body(f.tree)


# calls that do a program's work when made at module level (a library's import does not
# start process groups, print, or train)
_WORK = frozenset({"parse_args", "init_process_group", "print", "set_device", "all_reduce", "barrier"})


def _script_body(tree: ast.Module) -> bool:
    """Module-level code that does the program's work, not a library's set-up: a call of a
    function the file defines, ``parse_args()``, ``init_process_group()``, ``print()``, a loop."""
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in tree.body:
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            return True
        value = node.value if isinstance(node, (ast.Expr, ast.Assign)) else None
        if isinstance(value, ast.Call):
            func = value.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if (isinstance(func, ast.Name) and name in defined) or name in _WORK:
                return True
    return False


def entry_finding(f, rule) -> None:
    """Report (and fix) a missing transfer_to_npu import in an entry point."""
    if re.search(r"transfer_to_npu", f.text):
        return
    pos = anchor_offset(f.text, f.tree)
    nl = "\r\n" if "\r\n" in f.text[:2000] else "\n"
    fix = fix_for(rule, [Edit(pos, pos, IMPORT + nl)], {}, description=f"add `{IMPORT.split('  #')[0]}`")
    f.report(rule, pos, pos, {}, fix)
