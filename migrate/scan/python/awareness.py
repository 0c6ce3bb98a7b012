"""Code that already handles NPU, or that means CUDA on purpose: found once per file.

"NPU-aware" means an NPU arm or check really exists. Every target leaves alone, and reports
as ``npu_aware`` (no effort):

* an if/elif chain or conditional expression with an arm that names NPU
  (``elif is_npu_available():``, ``"npu" if ... else "cuda"``, ``hasattr(torch, "npu")``);
* a tuple/list/set/dict that already holds "npu" (or "hccl");
* a boolean expression that names NPU (``is_torch_npu_available() or torch.cuda...``);
* a function or class named for CUDA whose NPU sibling exists in the project
  (``CUDA_Accelerator`` beside ``NPU_Accelerator``): one arm of a real dispatch;
* every finding of a file that imports ``transfer_to_npu``.

With --target portable, also NPU-aware: ``"cuda"`` chosen under a condition that already
proves CUDA, beside a device-generic other arm (``"cuda" if xla_on_gpu() else
state.device.type``): the other arm serves the NPU.

Names alone decide nothing: ``use_cuda = torch.cuda.is_available()`` and a function called
``_setup_cuda_device`` are ported like any other code (a rename is the report's suggestion).
(Imports guarded by ``except ImportError`` are the effort model's: it discounts them.)

With --target portable, left as written (reported, no fix): a table keyed by device type
without an "npu" entry (a person adds the entry), but for the ``"cuda"`` key of one whose
NPU entry the port adds (scan/python/device_tables.py).

The regions that need no NPU arm (NVIDIA-only code, type checks, old-torch fallbacks) are
scan/python/left_as_written.py's; NPU twins side by side are scan/python/npu_twins.py's.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace

from migrate.scan.helper_finder import wrapped
from migrate.scan.npu_names import names_npu
from migrate.scan.python.dead_code import dead_regions
from migrate.scan.python.device_tables import table_key
from migrate.scan.python.left_as_written import needs_no_port, nvidia_only, vendor_tests
from migrate.scan.python.npu_checks import bound_check, family_check, own_check
from migrate.scan.python.npu_twins import BLOCK_TYPES, npu_twins
from migrate.scan.python.spans import SpanIndex

_CUDA_FN = re.compile(r"cuda|rocm|(?<![a-z])hip(?![a-z])|nccl|nvml|nvidia", re.IGNORECASE)
_TRANSFER = re.compile(r"transfer_to_npu")
_HANDLED = "already handled for NPU here"
BY_NAME = "is about CUDA by its name"  # applies to rules with device-generic forms only


class Regions:
    """Character spans of the file: NPU-aware ones, and ones to leave as written."""

    def __init__(self):
        self.aware: list[tuple[int, int, str]] = []
        self.keep: list[tuple[int, int, str]] = []
        self.renames: list[tuple[int, int, str]] = []  # functions named for CUDA, ported
        self.own: list[tuple[int, int]] = []  # the portable forms this tool writes
        self.hccl: list[tuple[int, int]] = []  # functions that already test for HCCL
        self._index: tuple[SpanIndex[str], ...] | None = None

    def _indexes(self) -> tuple[SpanIndex[str], ...]:
        if self._index is None:  # the spans are complete once the first question comes
            self._index = (
                SpanIndex(self.aware),
                SpanIndex(self.keep),
                SpanIndex([(a, b, "") for a, b in self.own]),
                SpanIndex([(a, b, "") for a, b in self.hccl]),
            )
        return self._index

    def own_at(self, offset: int) -> bool:
        return self._indexes()[2].at(offset) is not None

    def hccl_at(self, offset: int) -> bool:
        return self._indexes()[3].at(offset) is not None

    def aware_at(self, offset: int) -> str | None:
        return self._indexes()[0].at(offset)

    def keep_at(self, offset: int) -> str | None:
        return self._indexes()[1].at(offset)


@dataclass
class _Facts:
    """What the per-node region checks need to know about the file."""

    portable: bool
    has_npu: bool
    proven: bool  # portable and the file spells "cuda": a condition can prove CUDA
    cuda_fn: bool  # portable, NPU arms beside CUDA-named functions
    arms: set


def _portable_regions(f, nodes, out: Regions) -> None:
    """Annotations and the project's own device helpers (and their module's top level)."""
    for node in nodes(ast.arg, ast.FunctionDef, ast.AsyncFunctionDef, ast.AnnAssign):
        for ann in _annotations(node):
            out.aware.append((*f.span(ann), "a type annotation, which runs nothing"))
    helpers = [
        n
        for n in f.tree.body
        if isinstance(n, ast.FunctionDef)
        and (found := f.devices.own.get(n.name)) is not None
        and not found.ours
    ]
    for node in helpers:
        out.aware.append((*f.span(node), f"`{node.name}()` is the project's device helper"))
    # ... and so is the module-level code of the module defining them (not one only wrapping
    # a call: migrate/scan/helper_finder.py)
    if any(wrapped(f.devices.own[n.name].kind) is None for n in helpers):
        for node in f.tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                why = "module-level code of the module that defines the project's device helpers"
                out.aware.append((*f.span(node), why))


def _names_npu_here(f, node, has_npu: bool) -> bool:
    """An If chain, conditional, collection, dict or boolean test that names the NPU."""
    if not has_npu:
        return False
    if isinstance(node, ast.If):
        return any(names_npu(f.source(t)) for t in _chain_tests(node))
    if isinstance(node, (ast.IfExp, ast.BoolOp)):
        return names_npu(f.source(node))
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_npu_const(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return any(k is not None and _is_npu_const(k) for k in node.keys)
    return False


def _node_region(f, node, facts: _Facts, out: Regions) -> None:
    if isinstance(node, (ast.If, ast.IfExp)) and facts.proven and _proves_cuda(node):
        out.aware.append((*f.span(node), "CUDA is proven by the condition; the other arm follows the device"))
    if _names_npu_here(f, node, facts.has_npu):
        out.aware.append((*f.span(node), _HANDLED))
    elif isinstance(node, (ast.If, ast.IfExp, ast.Tuple, ast.List, ast.Set, ast.BoolOp)):
        return
    elif isinstance(node, ast.Dict):
        if facts.portable and _device_table(node):
            why = 'a table per device without an "npu" entry: add one'
            a, b = f.span(node)
            key = table_key(f, node, "npu")  # the port adds its entry: all but its key kept
            cut = [(a, b)] if key is None else [(a, f.span(key)[0]), (f.span(key)[1], b)]
            out.keep += [(x, y, why) for x, y in cut]
    elif (
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and facts.cuda_fn
        and (sibling := _npu_sibling(node.name, facts.arms))
    ):
        out.aware.append((*f.span(node), f"`{node.name}` {BY_NAME} and `{sibling}` is its NPU arm"))
    elif (
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and facts.portable
        and _CUDA_FN.search(node.name)
    ):
        out.renames.append((*f.span(node), node.name))


def regions(f, portable: bool, lines: set[int] | None = None) -> Regions:
    """The file's regions that can hold a finding on ``lines`` (None: anywhere); those
    holding no finding change nothing (see ``mark``)."""
    out = Regions()
    text = f.text

    def nodes(*types: type[ast.AST]) -> list:
        return f.walk(*types) if lines is None else f.around(lines, *types)

    if _TRANSFER.search(text) and _imports_transfer(f.tree):
        out.aware.append((0, len(text), "transfer_to_npu patches it at run time"))
        return out
    if portable:  # annotations run nothing; the project's own device helpers are its dispatch
        _portable_regions(f, nodes, out)
    has_npu = names_npu(text)
    if has_npu:
        out.own = [f.span(n) for n in nodes(*_OWN_FORM_TYPES) if _own_form(f, n)]
    if "hccl" in text.lower():
        out.hccl = [f.span(n) for n in nodes(ast.FunctionDef, ast.AsyncFunctionDef) if _tests_hccl(n)]
    arms = _npu_arms(f) if portable else set()
    cuda_fn = portable and bool(arms) and bool(_CUDA_FN.search(text))
    proven = portable and '"cuda"' in text.replace("'", '"')
    out.aware += nvidia_only(f, nodes)
    out.aware += needs_no_port(f, nodes)
    out.aware += dead_regions(f, nodes)
    out.keep += vendor_tests(f, nodes)
    if not (has_npu or portable):
        return out
    if has_npu:
        for stmt, twin in npu_twins(f, nodes(*BLOCK_TYPES)):
            out.aware.append((*f.span(stmt), f"its NPU twin `{twin}` is beside it"))
    facts = _Facts(portable, has_npu, proven, cuda_fn, arms)
    for node in nodes(*_REGION_TYPES):
        _node_region(f, node, facts, out)
    return out


# every node type the loop at the end of regions() looks at
_REGION_TYPES = (
    ast.If,
    ast.IfExp,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.Dict,
    ast.BoolOp,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
)
_OWN_PAIRS = ({"cuda", "npu"}, {"nccl", "hccl"})


def _tests_hccl(fn) -> bool:
    """Does the function compare something with HCCL ("hccl", Backend.HCCL): an NPU arm
    of its backend logic already exists."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                if (isinstance(side, ast.Constant) and side.value == "hccl") or (
                    isinstance(side, ast.Attribute) and side.attr == "HCCL"
                ):
                    return True
    return False


_OWN_FORM_TYPES = (ast.Compare, ast.Call, ast.BoolOp, ast.IfExp)  # what _own_form can accept


def _own_form(f, node) -> bool:
    """A form a portable port writes, recognised exactly: `x in ("cuda", "npu")`,
    `s.startswith(("cuda", "npu"))`, `("cuda" in d or "npu" in d)`, and the NPU arms
    `(A if get_device_type() == "npu" else B)` (with the file's type helper), `A if
    is_npu_available() else B` and `torch.cuda.is_available() or is_npu_available()` (with
    the file's NPU check)."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
        return _pair(node.comparators[0])
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "startswith"
        and len(node.args) == 1
    ):
        return _pair(node.args[0])
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and len(node.values) == 2:
        first = node.values[0]
        if _check_call(f, node.values[1]) and isinstance(first, ast.Call) and not first.args:
            return f.qualname(first.func) == "torch.cuda.is_available"  # `... or is_npu_available()`
        consts = [
            v.left.value
            for v in node.values
            if isinstance(v, ast.Compare)
            and isinstance(v.left, ast.Constant)
            and isinstance(v.ops[0], ast.In)
        ]
        return set(consts) in _OWN_PAIRS
    if isinstance(node, ast.IfExp):
        test = node.test
        if _check_call(f, test):  # `"npu" if is_npu_available() else "cuda"`
            return True
        return (
            isinstance(test, ast.Compare)
            and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "npu"
            and isinstance(test.left, ast.Call)
            and isinstance(test.left.func, ast.Name)
            and (found := f.devices.own.get(test.left.func.id)) is not None
            and found.kind == "type"
            or _imported_type_helper(f, test)
        )
    return False


def _check_call(f, node) -> bool:
    """A call of the file's NPU check (migrate/scan/python/npu_checks.py): a library's it
    imports, or a function of its own named as one."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args):
        return False
    name = node.func.id
    own = own_check(f)
    family = family_check(f)
    return (
        name == bound_check(f)
        or (own is not None and own.name == name)
        or (family is not None and family[0] == name)
    )


def _imported_type_helper(f, test) -> bool:
    if not (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Call)
        and isinstance(test.left.func, ast.Name)
    ):
        return False
    name = test.left.func.id
    return (
        name in f.devices.imported
        and f.devices.imported[name].kind == "type"
        or (name in f.bindings.names and f.bindings.names[name].qualname.endswith("._device." + name))
    )


def _pair(node) -> bool:
    return (
        isinstance(node, ast.Tuple)
        and len(node.elts) == 2
        and all(isinstance(e, ast.Constant) for e in node.elts)
        and {getattr(e, "value", None) for e in node.elts} in _OWN_PAIRS
    )


def _renamed(reg: Regions, offset: int) -> str | None:
    inside = [(b - a, name) for a, b, name in reg.renames if a <= offset < b]
    return min(inside)[1] if inside else None


def _npu_arms(f) -> set[str]:
    """Names of the project's (and this file's) classes and functions that name NPU."""
    own = {n.name for n in f.definitions if names_npu(n.name)}
    return own | set(f.file_devices.npu_arms if f.file_devices else ())


def _npu_sibling(name: str, arms: set[str]) -> str | None:
    if not _CUDA_FN.search(name):
        return None
    lowered = {a.lower(): a for a in arms}
    for word in ("cuda", "gpu", "nccl"):
        for to in ("npu", "hccl"):
            cand = re.sub(word, to, name, flags=re.IGNORECASE).lower()
            if cand != name.lower() and cand in lowered:
                return lowered[cand]
    return None


_PROOF = re.compile(r"cuda|gpu", re.IGNORECASE)


def _proves_cuda(node) -> bool:
    """`"cuda" if <a test that names CUDA or GPU> else <generic>`, as an expression or as an
    if/else assigning or returning: the CUDA arm is a special case of device-following code."""
    arm: ast.expr | None
    other: ast.expr | None
    if isinstance(node, ast.IfExp):
        arm, other = node.body, node.orelse
    elif (
        len(node.body) == 1
        and len(node.orelse) == 1
        and type(node.body[0]) is type(node.orelse[0])
        and isinstance(node.body[0], (ast.Return, ast.Assign))
    ):
        arm, other = node.body[0].value, node.orelse[0].value
    else:
        return False
    return (
        isinstance(arm, ast.Constant)
        and arm.value == "cuda"
        and other is not None
        and not isinstance(other, ast.Constant)
        and _generic(other)
        and bool(_PROOF.search(ast.unparse(node.test)))
    )


def _generic(node) -> bool:
    """An expression that follows the device (`state.device.type`, `x.device`, a call)."""
    text = ast.unparse(node)
    return "cuda" not in text and bool(re.search(r"device|type|accelerator", text))


def _device_table(node: ast.Dict) -> bool:
    keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return "cuda" in keys and len(keys) > 1 and all(re.fullmatch(r"[a-z]+", k) for k in keys)


def _annotations(node):
    if isinstance(node, ast.arg) and node.annotation is not None:
        yield node.annotation
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
        yield node.returns
    elif isinstance(node, ast.AnnAssign):
        yield node.annotation


def _chain_tests(node: ast.If) -> list[ast.expr]:
    tests = [node.test]
    while len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        node = node.orelse[0]
        tests.append(node.test)
    return tests


def _is_npu_const(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and bool(re.fullmatch(r"(npu|hccl)(:\d+)?", node.value))
    )


def _imports_transfer(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and "transfer_to_npu" in (node.module + "".join(a.name for a in node.names))
        ):
            return True
        if isinstance(node, ast.Import) and any("transfer_to_npu" in a.name for a in node.names):
            return True
    return False


def mark(
    f,
    findings,
    portable: bool,
    generic: frozenset[str] = frozenset(),
    additions: frozenset[str] = frozenset(),
) -> list:
    """``findings`` of ``f``, those in NPU-aware regions marked so (new findings), fixes
    dropped where the code stays as it is; ``additions``: rules whose findings add the NPU's
    side beside a vendor's code (the family of device checks), never marked."""
    if not findings:
        return findings
    reg = regions(f, portable, {x.line for x in findings})
    if not reg.aware and not reg.keep and not reg.renames and not reg.own and not reg.hccl:
        return findings
    out = []
    for x in findings:
        if x.rule in additions:
            out.append(x)
            continue
        start = f.index.offset(x.line, x.column - 1)
        if reg.own_at(start):
            continue  # what a portable port wrote: not a finding
        why = reg.aware_at(start)
        if why is None and "nccl" in x.name and reg.hccl_at(start):
            why = _HANDLED + " (this function already tests for HCCL)"
        if why is not None and why.endswith(BY_NAME) and x.rule not in generic:
            why = None  # an env var or library named in a CUDA helper is still work
        if why is not None:  # no work: never fails --fail-on (see docs/contracts.md §3)
            x = x.left_as_is(f"{why}: left as is")
        elif (why := reg.keep_at(start)) is not None and x.fix is not None:
            x = x.for_a_person(f"left as is: {why}")
        elif x.fix is not None and (name := _renamed(reg, start)):
            x = replace(
                x,
                message=f"{x.message} (`{name}` is named for CUDA; once ported, "
                "consider a device-neutral name)",
            )
        out.append(x)
    return out
