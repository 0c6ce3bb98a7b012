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


def regions(f, portable: bool) -> Regions:
    out = Regions()
    text = f.text
    if _TRANSFER.search(text) and _imports_transfer(f.tree):
        out.aware.append((0, len(text), "transfer_to_npu patches it at run time"))
        return out
    if portable:  # annotations run nothing: `stream: torch.cuda.Stream` stays readable
        for node in ast.walk(f.tree):
            for ann in _annotations(node):
                out.aware.append((*f.span(ann), "a type annotation, which runs nothing"))
    has_npu = bool(_NPU.search(text))
    has_other = portable and bool(_OTHER.search(text))
    cuda_fn = portable and bool(_CUDA_FN.search(text))
    if not (has_npu or has_other or cuda_fn):
        return out
    for node in ast.walk(f.tree):
        if isinstance(node, ast.If) and portable and (answer := _cuda_answer(node)):
            out.keep.append((*f.span(node.test), f"it detects CUDA to answer {answer!r}: "
                                                 "a person adds the NPU case"))
        if isinstance(node, ast.If):
            tests = _chain_tests(node)
            if has_npu and any(_NPU.search(f.source(t)) for t in tests):
                out.aware.append((*f.span(node), _HANDLED))
            elif has_other and len(tests) > 1 and any(_OTHER.search(f.source(t)) for t in tests):
                out.keep.append((*f.span(node), "a device dispatch without an NPU arm: add one"))
        elif isinstance(node, ast.IfExp) and has_npu and _NPU.search(f.source(node)):
            out.aware.append((*f.span(node), _HANDLED))
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and has_npu and any(
                _is_npu_const(e) for e in node.elts):
            out.aware.append((*f.span(node), _HANDLED))
        elif isinstance(node, ast.Dict) and has_npu and any(
                k is not None and _is_npu_const(k) for k in node.keys):
            out.aware.append((*f.span(node), _HANDLED))
        elif isinstance(node, ast.Dict) and portable and _device_table(node):
            out.keep.append((*f.span(node), 'a table per device without an "npu" entry: add one'))
        elif isinstance(node, ast.BoolOp) and has_npu and _NPU.search(f.source(node)):
            out.aware.append((*f.span(node), _HANDLED))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and cuda_fn and \
                _CUDA_FN.search(node.name):
            out.aware.append((*f.span(node), f"`{node.name}` {BY_NAME}"))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and cuda_fn and (
                name := _cuda_named_target(node)):
            out.aware.append((*f.span(node), f"`{name}` {BY_NAME}"))
        elif isinstance(node, ast.BoolOp) and cuda_fn and (name := _cuda_named_operand(node)):
            out.keep.append((*f.span(node), f"the condition also asks `{name}`, about CUDA by "
                                            "its name; make the whole test device-generic"))
    return out


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
