"""Code that already handles NPU, or that means CUDA on purpose: found once per file.

Every target leaves alone, and reports as ``npu_aware`` (no effort):

* an if/elif chain or conditional expression with an arm that names NPU
  (``elif is_npu_available():``, ``"npu" if ... else "cuda"``, ``hasattr(torch, "npu")``);
* a tuple/list/set/dict that already holds "npu" (or "hccl");
* a boolean expression that names NPU (``is_torch_npu_available() or torch.cuda...``);
* every finding of a file that imports ``transfer_to_npu``.

(Imports guarded by ``except ImportError`` are the effort model's: it discounts them.)

With --target portable, also left as written (reported, no fix):

* an arm of a device dispatch over other backends (xpu, mps, hpu, ...) without an NPU arm —
  rewriting its CUDA arm would make it catch every accelerator; a person adds the NPU arm;
* the body of a function or class whose name says it is about CUDA (``is_cuda_available``,
  ``CUDA_Accelerator``): making it device-generic would make it lie.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from migrate.scan.python.spans import SpanIndex

_NPU = re.compile(r"(?<![a-z])(npu|hccl)|(npu|hccl)(?![a-z])", re.IGNORECASE)
_OTHER = re.compile(r"(?<![a-z])(xpu|mps|hpu|mlu|musa|xla|mtia|sdaa|gcu)(?![a-z])", re.IGNORECASE)
_CUDA_FN = re.compile(r"cuda|rocm|(?<![a-z])hip(?![a-z])|nccl|nvml|nvidia", re.IGNORECASE)
_TRANSFER = re.compile(r"transfer_to_npu")
_HANDLED = "already handled for NPU here"
BY_NAME = "is about CUDA by its name"  # applies to rules with device-generic forms only


class Regions:
    """Character spans of the file: NPU-aware ones, and ones to leave as written."""

    def __init__(self):
        self.aware: list[tuple[int, int, str]] = []
        self.keep: list[tuple[int, int, str]] = []
        self._index: tuple[SpanIndex[str], SpanIndex[str]] | None = None

    def _indexes(self) -> tuple[SpanIndex[str], SpanIndex[str]]:
        if self._index is None:  # the spans are complete once the first question comes
            self._index = (SpanIndex(self.aware), SpanIndex(self.keep))
        return self._index

    def aware_at(self, offset: int) -> str | None:
        return self._indexes()[0].at(offset)

    def keep_at(self, offset: int) -> str | None:
        return self._indexes()[1].at(offset)


@dataclass(frozen=True)
class Scope:
    """What the file's text holds, decided once: which detectors can fire at all."""

    portable: bool
    has_npu: bool
    has_other: bool
    cuda_fn: bool


# A detector looks at one node of its type: ("aware" | "keep", span, why) for each region.
Found = tuple[str, tuple[int, int], str]
Detector = Callable[[Any, Any, Scope], Iterator[Found]]


def regions(f, portable: bool) -> Regions:
    """The file's regions, from the parsed nodes of the types DETECTORS names (the indexed
    nodes: those holding a line a matcher walks, so every region a finding can sit in).
    Where regions nest, the outer one's reason is reported (sorted outermost first)."""
    out = Regions()
    text = f.text
    if _TRANSFER.search(text) and _imports_transfer(f.tree):
        out.aware.append((0, len(text), "transfer_to_npu patches it at run time"))
        return out
    scope = Scope(portable, bool(_NPU.search(text)), portable and bool(_OTHER.search(text)),
                  portable and bool(_CUDA_FN.search(text)))
    found: list[tuple[tuple[int, int, int, int], str, int, int, str]] = []
    tables = [ANNOTATIONS] if portable else []
    if scope.has_npu or scope.has_other or scope.cuda_fn:
        tables.append(DETECTORS)
    for group, table in enumerate(tables):
        for node_type, detectors in table.items():
            for node in f.nodes(node_type):
                depth = _depth(f, node)
                for seq, detect in enumerate(detectors):
                    for which, (a, b), why in detect(f, node, scope):
                        found.append(((group, depth, a, seq), which, a, b, why))
    for _, which, a, b, why in sorted(found, key=lambda x: x[0]):
        (out.aware if which == "aware" else out.keep).append((a, b, why))
    return out


def _depth(f, node) -> int:
    depth = 0
    while (node := f.parent(node)) is not None:
        depth += 1
    return depth


def _annotation(f, node, scope: Scope) -> Iterator[Found]:
    """Annotations run nothing: `stream: torch.cuda.Stream` stays readable (portable)."""
    for ann in _annotations(node):
        yield "aware", f.span(ann), "a type annotation, which runs nothing"


def _if_answers_cuda(f, node: ast.If, scope: Scope) -> Iterator[Found]:
    if scope.portable and (answer := _cuda_answer(node)):
        yield "keep", f.span(node.test), (f"it detects CUDA to answer {answer!r}: "
                                          "a person adds the NPU case")


def _if_chain(f, node: ast.If, scope: Scope) -> Iterator[Found]:
    tests = _chain_tests(node)
    if scope.has_npu and any(_NPU.search(f.source(t)) for t in tests):
        yield "aware", f.span(node), _HANDLED
    elif scope.has_other and len(tests) > 1 and any(_OTHER.search(f.source(t)) for t in tests):
        yield "keep", f.span(node), "a device dispatch without an NPU arm: add one"


def _npu_expression(f, node, scope: Scope) -> Iterator[Found]:
    """``"npu" if ... else "cuda"``, ``is_npu_available() or ...``."""
    if scope.has_npu and _NPU.search(f.source(node)):
        yield "aware", f.span(node), _HANDLED


def _npu_collection(f, node, scope: Scope) -> Iterator[Found]:
    if scope.has_npu and any(_is_npu_const(e) for e in node.elts):
        yield "aware", f.span(node), _HANDLED


def _device_dict(f, node: ast.Dict, scope: Scope) -> Iterator[Found]:
    if scope.has_npu and any(k is not None and _is_npu_const(k) for k in node.keys):
        yield "aware", f.span(node), _HANDLED
    elif scope.portable and _device_table(node):
        yield "keep", f.span(node), 'a table per device without an "npu" entry: add one'


def _bool_op(f, node: ast.BoolOp, scope: Scope) -> Iterator[Found]:
    if scope.has_npu and _NPU.search(f.source(node)):
        yield "aware", f.span(node), _HANDLED
    elif scope.cuda_fn and (name := _cuda_named_operand(node)):
        yield "keep", f.span(node), (f"the condition also asks `{name}`, about CUDA by its "
                                     "name; make the whole test device-generic")


def _cuda_named_definition(f, node, scope: Scope) -> Iterator[Found]:
    if scope.cuda_fn and _CUDA_FN.search(node.name):
        yield "aware", f.span(node), f"`{node.name}` {BY_NAME}"


def _cuda_named_assignment(f, node, scope: Scope) -> Iterator[Found]:
    if scope.cuda_fn and (name := _cuda_named_target(node)):
        yield "aware", f.span(node), f"`{name}` {BY_NAME}"


# Node type -> its detectors, in the order their regions are reported for one node.
DETECTORS: dict[type, tuple[Detector, ...]] = {
    ast.If: (_if_answers_cuda, _if_chain),
    ast.IfExp: (_npu_expression,),
    ast.Tuple: (_npu_collection,), ast.List: (_npu_collection,), ast.Set: (_npu_collection,),
    ast.Dict: (_device_dict,),
    ast.BoolOp: (_bool_op,),
    ast.FunctionDef: (_cuda_named_definition,), ast.AsyncFunctionDef: (_cuda_named_definition,),
    ast.ClassDef: (_cuda_named_definition,),
    ast.Assign: (_cuda_named_assignment,), ast.AnnAssign: (_cuda_named_assignment,),
}
ANNOTATIONS: dict[type, tuple[Detector, ...]] = {
    ast.arg: (_annotation,), ast.FunctionDef: (_annotation,),
    ast.AsyncFunctionDef: (_annotation,), ast.AnnAssign: (_annotation,),
}


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return False
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError")
               for n in names)


_ANSWER = re.compile(r"cuda|gpu|nccl", re.IGNORECASE)
_DEVICE_VAR = re.compile(r"(^|_)(device|devices|dev|device_type|device_str|device_name)$")


def _cuda_answer(node: ast.If) -> str | None:
    """`if torch.cuda.is_available(): accelerator_name = "cuda"`: the test detects CUDA."""
    if not re.search(r"\bcuda\b", ast.unparse(node.test)):
        return None
    for stmt in node.body:
        value = getattr(stmt, "value", None)
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)
                and _ANSWER.search(value.value)):
            continue
        if isinstance(stmt, ast.Return):
            return value.value
        if isinstance(stmt, ast.Assign) and all(
                isinstance(t, ast.Name) and not _DEVICE_VAR.search(t.id) for t in stmt.targets):
            return value.value
    return None


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


def _cuda_named_target(node) -> str | None:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for t in targets:
        name = t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else ""
        if _CUDA_FN.search(name):
            return name
    return None


def _cuda_named_operand(node: ast.BoolOp) -> str | None:
    """A name in the condition (not torch.cuda itself, nor .is_cuda) that says CUDA."""
    for sub in ast.walk(node):
        name = sub.id if isinstance(sub, ast.Name) else \
            sub.attr if isinstance(sub, ast.Attribute) else ""
        if name not in ("cuda", "is_cuda") and _CUDA_FN.search(name):
            return name
    return None


def _chain_tests(node: ast.If) -> list[ast.expr]:
    tests = [node.test]
    while len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        node = node.orelse[0]
        tests.append(node.test)
    return tests


def _is_npu_const(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(
        re.fullmatch(r"(npu|hccl)(:\d+)?", node.value))


def _imports_transfer(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and "transfer_to_npu" in (
                node.module + "".join(a.name for a in node.names)):
            return True
        if isinstance(node, ast.Import) and any("transfer_to_npu" in a.name for a in node.names):
            return True
    return False


def mark(f, findings, portable: bool, generic: frozenset[str] = frozenset()) -> list:
    """``findings`` of ``f``, those in NPU-aware regions marked so (new findings), fixes
    dropped where the code stays as it is."""
    if not findings:
        return findings
    reg = regions(f, portable)
    if not reg.aware and not reg.keep:
        return findings
    out = []
    for x in findings:
        start = f.index.offset(x.line, x.column - 1)
        why = reg.aware_at(start)
        if why is not None and why.endswith(BY_NAME) and x.rule not in generic:
            why = None  # an env var or library named in a CUDA helper is still work
        if why is not None:  # no work: never fails --fail-on (see docs/contracts.md §3)
            x = x.left_as_is(f"{why}: left as is")
        elif (why := reg.keep_at(start)) is not None and x.fix is not None:
            x = x.for_a_person(f"left as is: {why}")
        out.append(x)
    return out
