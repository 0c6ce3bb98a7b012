"""--target transfer: torch_npu's transfer_to_npu patches torch.cuda, device strings passed to
torch, `.cuda()` and the NCCL backend at run time. Rules whose row says ``transfer: patched``
are then left as written (reported as handled, no effort) — except comparisons, which no
patch can reach (``x.device.type == "cuda"`` is False on an NPU), and the ``"cuda"`` key of a
table looked up by device type, which gains the NPU's entry (scan/python/device_tables.py). Entry points (a
``__main__`` block, a package's ``__main__.py``, a script whose work runs at module level, as
torchrun scripts often are) get the import once (MIG206). A script outside any package that
no scanned file imports and that shows no entry shape cannot be judged: its CUDA uses are not
counted as patched, and one finding says so (MIG207).
"""

from __future__ import annotations

import ast
import re

from migrate.core.fileio import newline_of
from migrate.core.findings import Edit, Finding, fix_for
from migrate.core.import_placement import anchor_offset
from migrate.scan.python.device_tables import table_keys

IMPORT = "from torch_npu.contrib import transfer_to_npu  # noqa: F401"
ENTRY_RULE = "MIG206"
ENTRY, LIBRARY, UNDECIDED = "entry", "library", "undecided"


def settle(f, findings: list[Finding], rules) -> list[Finding]:
    """``findings`` with what transfer_to_npu patches marked as handled (new findings); in a
    file that cannot be judged an entry point or a module, left as they are, plus the
    ``undecided`` rule's finding saying why."""
    tables = table_keys(f, "npu") if "cuda" in f.text else set()  # the NPU entry is added
    if entry_role(f) != UNDECIDED:
        return [_settled(f, x, rules.get(x.rule), tables) for x in findings]
    patched = sum(_patched(f, x, rules.get(x.rule), tables) for x in findings)
    undecided = [
        r for r in rules.values() if r.kind == "transfer-entry-point" and r.params.get("role") == UNDECIDED
    ]
    if not patched or not undecided or re.search(r"transfer_to_npu", f.text):
        return findings
    before = len(f.findings)
    pos = anchor_offset(f.text, f.tree)
    f.report(undecided[0], pos, pos, {"count": str(patched)}, _import_fix(f, undecided[0]))
    return [*findings, *f.findings[before:]]


def _patched(f, x: Finding, rule, tables: set[int]) -> bool:
    if rule is None or rule.transfer != "patched" or x.npu_aware:
        return False
    start = f.index.offset(x.line, x.column - 1)
    # x.device.type == "cuda": no patch reaches a string comparison, nor table[device.type]
    return not (rule.kind == "context-string" and (_in_compare(f, start) or start in tables))


def _settled(f, x: Finding, rule, tables: set[int]) -> Finding:
    if not _patched(f, x, rule, tables):
        return x
    return x.left_as_is("transfer_to_npu patches it at run time: left as is")


def _in_compare(f, offset: int) -> bool:
    for node in f.nodes(ast.Compare):
        a, b = f.span(node)
        if a <= offset < b:
            return True
    return False


def is_entry_point(f) -> bool:
    return entry_role(f) == ENTRY


def entry_role(f) -> str:
    """What the file is when the program runs:

    * ``entry``: a top-level ``if __name__ == "__main__":`` block, a package's __main__.py,
      or work at module level (torchrun scripts without a ``__main__`` block: ``main()``,
      ``args = parser.parse_args()``, a training loop), in a file no other scanned file
      imports; a script outside any package that nothing imports also counts any call made
      for its effect at module level (``train(model)``, ``fire.Fire(main)``);
    * ``library``: imported by another file, or a package module without that shape (the
      program that imports it gets transfer_to_npu);
    * ``undecided``: a script outside any package that nothing scanned imports and that has
      no entry shape (run as a program, or imported from elsewhere? no way to tell)."""
    name = f.rel.rsplit("/", 1)[-1]
    if name == "__main__.py" or any(
        isinstance(node, ast.If) and re.search(r"__name__\s*==\s*['\"]__main__['\"]", f.source(node.test))
        for node in f.tree.body
    ):
        return ENTRY
    devices = f.file_devices  # None: a text scanned alone, as a script nothing imports
    imported = devices.imported if devices is not None else False
    if name == "__init__.py" or imported:
        return LIBRARY
    if _script_body(f.tree):
        return ENTRY
    if imported is None or name in _NOT_PROGRAMS:  # a package module: its importer's
        return LIBRARY
    return ENTRY if _effect_calls(f.tree) else UNDECIDED


# calls that do a program's work when made at module level (a library's import does not
# start process groups, print, or train)
_WORK = frozenset(
    {
        *("parse_args", "init_process_group", "print", "set_device", "all_reduce", "barrier"),
        *("main", "train", "fit", "Fire", "spawn", "launch"),  # main() imported from elsewhere
    }
)
# scripts that are not torch programs (packaging, test and docs configuration)
_NOT_PROGRAMS = frozenset({"setup.py", "conftest.py", "conf.py", "noxfile.py"})
# module-level calls that set up the process, not its work (sys.path.insert, warnings)
_SET_UP = frozenset(
    {"insert", "append", "extend", "filterwarnings", "simplefilter", "basicConfig", "setLevel", "setdefault"}
)


def _effect_calls(tree: ast.Module) -> bool:
    """A call made for its effect at module level, set-up aside: ``train(model)``."""
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name not in _SET_UP:
                return True
    return False


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
    f.report(rule, pos, pos, {}, _import_fix(f, rule))


def _import_fix(f, rule):
    pos = anchor_offset(f.text, f.tree)
    nl = newline_of(f.text)
    return fix_for(rule, [Edit(pos, pos, IMPORT + nl)], {}, description=f"add `{IMPORT.split('  #')[0]}`")
