"""The decompose pipeline as onnx_ir passes: rewrite what the backend rejects, lower the opset."""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx_ir as ir

from migrate.ops.decompose import lowering
from migrate.ops.decompose.build import Builder, Decline
from migrate.ops.decompositions import rules_for
from migrate.ops.registry import DEFAULT_DOMAINS, SUPPORTED, load_onnx


@dataclass
class DecomposeLog:
    rewrites: list[dict] = field(default_factory=list)
    declined: list[dict] = field(default_factory=list)
    opset_from: int = 0
    opset_to: int = 0
    lowering_blockers: list[dict] = field(default_factory=list)


def needs_rewrite(node, reg, opset: int, force: set[str], current: int = 0) -> bool:
    """Rewrite when forced, when the backend rejects the node at the goal opset, or when the
    node would block lowering from ``current`` to the goal opset."""
    if node.op_type in force:
        return True
    if current > opset and rules_for(node.op_type, node.domain) and lowering.blocker(node, current, opset):
        return True
    if node.domain not in DEFAULT_DOMAINS:
        return False
    dtype = (
        node.inputs[0].dtype.name
        if node.inputs and node.inputs[0] is not None and node.inputs[0].dtype is not None
        else None
    )
    if reg.lookup(node.op_type, node.domain, opset, dtype).status != SUPPORTED:
        return True
    return _breaks_limit(node)


def ir_node_view(node):
    """The onnx_limits view of an onnx_ir node (the census builds the same from protos)."""
    from migrate.ops.onnx_limits import NodeView

    inputs: list[tuple[str | None, int | None, bool] | None] = []
    for value in node.inputs:
        if value is None:
            inputs.append(None)
            continue
        producer = value.producer()
        const = value.const_value is not None or (producer is not None and producer.op_type == "Constant")
        rank = len(value.shape) if value.shape is not None else None
        inputs.append((value.dtype.name if value.dtype is not None else None, rank, const))
    attrs = {k: a.value for k, a in node.attributes.items()}
    return NodeView(
        node.op_type, node.domain or "ai.onnx", attrs, inputs, [o.name or "" for o in node.outputs]
    )


def _breaks_limit(node) -> bool:
    from migrate.ops.onnx_limits import check

    return check(ir_node_view(node)) is not None


def _label(node) -> str:
    if node.name:
        return node.name
    graph = node.graph.name if node.graph is not None and node.graph.name else "graph"
    return f"{graph}/{node.op_type}"


def _emitted_problem(nodes, reg, goal: int) -> str | None:
    """Why an emitted node would not run at the goal opset (dtype known inputs only)."""
    for node in nodes:
        first = node.inputs[0] if node.inputs else None
        dtype = first.dtype.name if first is not None and first.dtype is not None else None
        verdict = reg.lookup(node.op_type, node.domain, goal, dtype)
        if verdict.status != SUPPORTED:
            return f"would emit {node.op_type}: {verdict.reason}"
    return None


def _rewrite(node, opset: int, log: DecomposeLog, reg, goal: int) -> bool:
    reasons, label = [], _label(node)
    for rule in rules_for(node.op_type, node.domain):
        b = Builder(node, opset)
        try:
            outs = rule.fn(node, b)
        except (ArithmeticError, LookupError, ValueError, TypeError, MemoryError) as exc:
            # a node's attributes and shapes are untrusted (frame_step 0, a rank that lies):
            # the rule declines, the run goes on
            outs = Decline(f"cannot rewrite this node ({type(exc).__name__}: {str(exc)[:120]})")
        if outs is None:
            outs = Decline("the rule returned neither outputs nor a Decline")
        why = outs.reason if isinstance(outs, Decline) else _emitted_problem(b.tape.nodes, reg, goal)
        if why:
            reasons.append(f"{rule.name}: {why}")
            continue
        pairs = [(o, n) for o, n in zip(node.outputs, outs, strict=False) if n is not None]
        for old, new in pairs:
            new.name = None
            if old.type is not None:
                new.type = old.type
            if old.shape is not None:
                new.shape = old.shape
        ir.convenience.replace_nodes_and_values(
            node.graph, node, [node], b.tape.nodes, [p[0] for p in pairs], [p[1] for p in pairs]
        )
        log.rewrites.append(
            {"node": label, "op": node.op_type, "rule": rule.name, "emitted": len(b.tape.nodes)}
        )
        return True
    log.declined.append(
        {"node": label, "op": node.op_type, "why": "; ".join(reasons) or "no decomposition registered"}
    )
    return False


def _all_nodes(graph):
    from onnx_ir.traversal import RecursiveGraphIterator

    return list(RecursiveGraphIterator(graph))


def _bodies(model) -> list:
    """The main graph and every model-local function body: all are rewritten and lowered."""
    return [model.graph, *model.functions.values()]


class DecomposePass(ir.passes.InPlacePass):
    """Rewrite every node the backend rejects at the goal opset (or that blocks lowering)."""

    def __init__(self, reg, opset: int, goal: int, force: set[str], log: DecomposeLog):
        super().__init__()
        self.reg, self.opset, self.goal, self.force, self.log = reg, opset, goal, force, log

    def call(self, model):
        before = len(self.log.rewrites)
        for node in [n for body in _bodies(model) for n in _all_nodes(body)]:
            if needs_rewrite(node, self.reg, self.goal, self.force, self.opset):
                _rewrite(node, self.opset, self.log, self.reg, self.goal)
        return ir.passes.PassResult(model, modified=len(self.log.rewrites) > before)


class LowerOpsetPass(ir.passes.InPlacePass):
    """Set the default-domain opset to ``goal`` when no node changes meaning on the way."""

    def __init__(self, opset: int, goal: int, log: DecomposeLog):
        super().__init__()
        self.opset, self.goal, self.log = opset, goal, log

    def call(self, model):
        if self.goal >= self.opset:
            return ir.passes.PassResult(model, modified=False)
        _lower(model, self.opset, self.goal, self.log)
        return ir.passes.PassResult(model, modified=self.log.opset_to == self.goal)


def decompose_model(
    model, backend: str = "atc", target: str | None = None, force: set[str] | None = None
) -> DecomposeLog:
    """Rewrite ``model`` (an onnx_ir Model) in place; returns what was done."""
    reg = load_onnx(backend, target)
    opset = model.opset_imports.get("", model.opset_imports.get("ai.onnx", 0))
    goal = min(opset, reg.max_opset) if backend == "atc" else opset
    log = DecomposeLog(opset_from=opset, opset_to=opset)
    DecomposePass(reg, opset, goal, force or set(), log)(model)
    LowerOpsetPass(opset, goal, log)(model)
    UniqueNamesPass()(model)
    return log


class UniqueNamesPass(ir.passes.InPlacePass):
    """Every node and value named, and uniquely in the whole model (subgraphs included):
    unnamed nodes in the input and the nodes rules emit would otherwise collide."""

    def call(self, model):
        from onnx_ir.passes.common import NameFixPass

        result = NameFixPass()(model)
        for func in model.functions.values():
            seen: set[str] = set()
            for i, node in enumerate(_all_nodes(func)):
                if not node.name or node.name in seen:
                    node.name = f"{func.name}/{node.op_type}_{i}"
                seen.add(node.name)
        return ir.passes.PassResult(model, modified=result.modified)


def _lower(model, opset: int, goal: int, log: DecomposeLog) -> None:
    nodes = [n for body in _bodies(model) for n in _all_nodes(body) if n.domain in DEFAULT_DOMAINS]
    for node in nodes:
        why = lowering.blocker(node, opset, goal)
        if why:
            log.lowering_blockers.append({"node": _label(node), "op": node.op_type, "why": why})
    if log.lowering_blockers:
        return
    for node in nodes:
        lowering.rename_values(node)
        node.version = None
    for owner in (model, *model.functions.values()):
        if owner.opset_imports.get("", owner.opset_imports.get("ai.onnx")) is not None:
            owner.opset_imports[""] = goal
            owner.opset_imports.pop("ai.onnx", None)
    log.opset_to = goal
