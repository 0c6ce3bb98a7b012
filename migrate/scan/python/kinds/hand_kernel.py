"""Kind ``hand-kernel``: hand-written PyTorch code that Ascend runs faster as one fused op.

Each row names one ``pattern`` (a detector below) and is perf advice (category ``perf``):
the code already runs on an NPU, op by op. Detectors look at the shape of the code, not
at names a project may choose freely, and stay narrow (a false alarm costs a reader more
than a missed speed-up):

* ``rms-norm``: ``rsqrt(<mean of a square> + eps)`` -> torch_npu.npu_rms_norm
* ``rotary``: ``x * cos + rotate_half(x) * sin`` -> torch_npu.npu_rotary_mul
* ``swiglu``: ``silu(a) * b`` -> torch_npu.npu_swiglu
* ``eager-attention``: ``softmax(q @ k.transpose(...))`` -> scaled_dot_product_attention
  (which torch_npu runs as its fused attention kernel) or torch_npu.npu_fusion_attention
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from migrate.core.kinds import Token, param, rule_kind
from migrate.core.registry import Registry
from migrate.core.rules import Rule
from migrate.scan.python.pyfile import PyFile

PARAMS = {"pattern": param(str, required=True, doc="detector name (see hand_kernel.py)")}

Detector = Callable[[PyFile], Iterator[ast.AST]]
# The detectors of this module, on the shared plug-in registry (meta: their prefilter tokens).
DETECTORS: Registry[Detector] = Registry("hand-kernel detector", __name__)


def detector(name: str, *tokens: str) -> Callable[[Detector], Detector]:
    return DETECTORS.register(name, tokens=tokens)


def _tokens(rule: Rule, rules) -> set[Token]:
    name = str(rule.params.get("pattern"))
    words = DETECTORS.meta(name)["tokens"] if name in DETECTORS else ()
    return {Token(t) for t in words} | {Token(str(w)) for w in rule.params.get("prefilter") or ()}


def refs(rule: Rule) -> str | None:
    name = rule.params.get("pattern")
    if name not in DETECTORS:
        return (
            f"params key 'pattern': no detector {name!r} is registered "
            f"(known: {', '.join(sorted(DETECTORS))})"
        )
    return None


@rule_kind("hand-kernel", engine="python", params=PARAMS, tokens=_tokens, refs=refs)
def run(f: PyFile, rules: list[Rule]) -> None:
    for rule in rules:
        for node in DETECTORS[str(rule.params["pattern"])](f):
            f.report_node(rule, node, {"name": _name(f, node)}, None)


def _name(f: PyFile, node: ast.AST) -> str:
    text = " ".join(f.source(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _receiver(call: ast.Call) -> ast.expr | None:
    """``x`` of a method call ``x.m(...)``."""
    return call.func.value if isinstance(call.func, ast.Attribute) else None


def _callee(f: PyFile, call: ast.AST) -> str:
    """'torch.rsqrt' for a resolved call, '.rsqrt' for a method call, else ''."""
    if not isinstance(call, ast.Call):
        return ""
    qual = f.qualname(call.func)
    if qual:
        return qual
    if isinstance(call.func, ast.Attribute):
        return "." + call.func.attr
    if isinstance(call.func, ast.Name):
        return call.func.id
    return ""


def _is_square(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return isinstance(node.right, ast.Constant) and node.right.value == 2
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return ast.dump(node.left) == ast.dump(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in ("pow", "pow_") and node.args:
            return isinstance(node.args[0], ast.Constant) and node.args[0].value == 2
        return node.func.attr == "square"
    return False


def _is_mean_of_square(f: PyFile, node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Call):
            continue
        callee = _callee(f, sub)
        if callee in (".mean", "torch.mean"):
            target = _receiver(sub) if callee == ".mean" else (sub.args[0] if sub.args else None)
            if target is not None and any(_is_square(s) for s in ast.walk(target)):
                return True
    return False


@detector("rms-norm", "rsqrt")
def rms_norm(f: PyFile) -> Iterator[ast.AST]:
    for call in f.nodes(ast.Call):
        callee = _callee(f, call)
        arg = (
            call.args[0]
            if callee == "torch.rsqrt" and call.args
            else _receiver(call)
            if callee == ".rsqrt"
            else None
        )
        if arg is not None and _is_mean_of_square(f, _with_values(f, call, arg)):
            yield call


def _with_values(f: PyFile, use: ast.expr, expr: ast.expr) -> ast.expr:
    """``expr`` and the last values of the names it reads (one step back)."""
    names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    values = [v for name in sorted(names) if (v := _last_value(f, use, name)) is not None]
    return ast.Tuple(elts=[expr, *values], ctx=ast.Load()) if values else expr


def _calls_named(node: ast.AST, word: str) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if word in name:
                return True
    return False


@detector("rotary", "rotate_half")
def rotary(f: PyFile) -> Iterator[ast.AST]:
    for node in f.nodes(ast.BinOp):
        if not isinstance(node.op, ast.Add):
            continue
        sides = [node.left, node.right]
        if (
            all(isinstance(s, ast.BinOp) and isinstance(s.op, ast.Mult) for s in sides)
            and sum(_calls_named(s, "rotate_half") for s in sides) == 1
        ):
            yield node


_SILU = {"torch.nn.functional.silu", "torch.silu", ".silu"}


@detector("swiglu", "silu")
def swiglu(f: PyFile) -> Iterator[ast.AST]:
    for node in f.nodes(ast.BinOp):
        if (
            isinstance(node.op, ast.Mult)
            and sum(_callee(f, s) in _SILU for s in (node.left, node.right)) == 1
        ):
            yield node


_SOFTMAX = {"torch.softmax", "torch.nn.functional.softmax", ".softmax"}
_MATMUL = {"torch.matmul", "torch.bmm", ".matmul", ".bmm"}


def _is_qk(f: PyFile, node: ast.AST) -> bool:
    """Holds a matmul one of whose operands is transposed: q @ k.transpose(-2, -1)."""
    for sub in ast.walk(node):
        operands: list[ast.expr] = []
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.MatMult):
            operands = [sub.left, sub.right]
        elif isinstance(sub, ast.Call) and _callee(f, sub) in _MATMUL:
            operands = list(sub.args) + (
                [sub.func.value]
                if isinstance(sub.func, ast.Attribute) and _callee(f, sub).startswith(".")
                else []
            )
        for op in operands:
            for part in ast.walk(op):
                if isinstance(part, ast.Attribute) and part.attr in ("transpose", "mT", "T"):
                    return True
    return False


_FUSED_ATTENTION = (
    "scaled_dot_product_attention",
    "flash_attn",
    "fusion_attention",
    "memory_efficient_attention",
    "flex_attention",
)


def _has_fused_path(f: PyFile, node: ast.AST) -> bool:
    """Is ``node`` in a function that also calls a fused attention kernel (the eager code
    is then the fallback branch, as in timm's ``if self.fused_attn: ... else: ...``)?"""
    scope = _function_of(f, node)
    if scope is None:
        return False
    if scope.name.startswith("eager"):  # transformers' eager_attention_forward: the
        return True  # reference path beside its sdpa/flash dispatch
    for sub in ast.walk(scope):
        if isinstance(sub, ast.Call):
            name = _callee(f, sub)
            if any(word in name for word in _FUSED_ATTENTION):
                return True
        elif isinstance(sub, ast.Attribute) and sub.attr == "fused_attn":
            return True
    return False


def _function_of(f: PyFile, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    scope = f.parent(node)
    while scope is not None:
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return scope
        scope = f.parent(scope)
    return None


@detector("eager-attention", "softmax")
def eager_attention(f: PyFile) -> Iterator[ast.AST]:
    for call in f.nodes(ast.Call):
        callee = _callee(f, call)
        if callee not in _SOFTMAX or _has_fused_path(f, call):
            continue
        scores = _receiver(call) if callee == ".softmax" else (call.args[0] if call.args else None)
        if scores is not None and _is_qk(f, _with_values(f, call, scores)):
            yield call


def _last_value(f: PyFile, use: ast.expr, name: str) -> ast.expr | None:
    """The value last assigned to ``name`` before ``use`` in its function, if any;
    ``x = q @ k.mT; x = x * scale`` counts the first value as well."""
    scope = _function_of(f, use)
    if scope is None:
        return None
    values = [
        n.value
        for n in ast.walk(scope)
        if isinstance(n, ast.Assign)
        and n.lineno < use.lineno
        and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
    ]
    values.sort(key=lambda v: (v.lineno, v.col_offset))
    return ast.Tuple(elts=values[-2:], ctx=ast.Load()) if values else None
