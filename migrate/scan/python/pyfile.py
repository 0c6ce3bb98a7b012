"""One parsed Python file, as the matchers see it: text, ast, bindings, spans, findings."""

from __future__ import annotations

import ast
import bisect
import heapq
import re
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from migrate.core.findings import Finding, Fix, LineIndex, finding_at
from migrate.core.rules import Rule
from migrate.scan.project import FileDevices
from migrate.scan.python.bindings import Bindings, collect_bindings, statement_index
from migrate.scan.python.decisions import decision_spans
from migrate.scan.python.device_names import DeviceNames
from migrate.scan.python.fixers import FixContext
from migrate.scan.python.guards import Guards, find_guards
from migrate.scan.python.spans import SpanIndex

N = TypeVar("N", bound=ast.AST)
_SYMBOL_KEYS = ("name", "value", "attr", "symbol")


def symbol_of(values: dict) -> str:
    """What a finding is about, for grouping work: the first value a matcher named."""
    for key in _SYMBOL_KEYS:
        value = values.get(key)
        if value:
            return str(value)
    return ""


@dataclass
class PyFile:
    text: str
    rel: str
    tree: ast.Module
    index: LineIndex
    bindings: Bindings
    parents: dict[int, ast.AST] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    # Spans already reported per rule, so overlapping matchers report a place once.
    _seen: set[tuple[str, int, int]] = field(default_factory=set)

    by_type: dict[type, list[ast.AST]] = field(default_factory=dict)
    target: str = "portable"  # the port target fixes are made for (migrate/core/targets.py)
    file_devices: FileDevices | None = None  # the project around it (migrate/scan/project/)
    _guards: Guards | None = None
    _decisions: SpanIndex[int] | None = None
    _devices: DeviceNames | None = None
    _walked: dict[type, list[tuple[int, ast.AST]]] | None = None
    lines: list[int] | None = None  # the lines the index was pruned to (None: not pruned)
    imports: list[ast.Import | ast.ImportFrom] = field(default_factory=list)  # at any depth
    definitions: list[ast.AST] = field(default_factory=list)  # functions and classes, any depth
    memo: dict[str, Any] = field(default_factory=dict)  # per-file answers (npu_checks.py)

    @classmethod
    def parse(cls, text: str, rel: str, hit=None) -> PyFile:
        """Parse; with ``hit`` (a Prefilter), index only the nodes whose lines hold one of its
        tokens (or a name imported on such a line): the rest cannot yield a finding."""
        tree = ast.parse(text, filename=rel, type_comments=False)
        index = LineIndex(text)
        imports, definitions = statement_index(tree)
        bindings = collect_bindings(tree, imports)
        f = cls(text, rel, tree, index, bindings, imports=imports, definitions=definitions)
        lines = None if hit is None else _hit_lines(text, index, hit, bindings)
        f.by_type, f.parents = _index_nodes(tree, lines)
        f.lines = lines
        return f

    @overload
    def nodes(self, kind: type[N], /) -> list[N]: ...

    @overload
    def nodes(self, *types: type[ast.AST]) -> list[Any]: ...

    def nodes(self, *types: type[ast.AST]) -> list[Any]:
        """The indexed nodes of these types (of one type: typed as that type)."""
        out: list[Any] = []
        for t in types:
            out.extend(self.by_type.get(t, ()))
        return out

    def walk(self, *types: type[ast.AST]) -> list[Any]:
        """Every node of these types in the file (not pruned to the prefilter's lines), in
        ``ast.walk`` order; the tree is walked once per file, whatever the passes ask."""
        if self._walked is None:
            self._walked = walk_by_type(self.tree)
        lists = [self._walked.get(t, []) for t in types]
        if len(lists) == 1:
            return [n for _, n in lists[0]]
        return [n for _, n in heapq.merge(*lists, key=lambda pn: pn[0])]

    def around(self, lines: set[int], *types: type[ast.AST]) -> list[Any]:
        """The nodes of these types that can hold an offset on one of ``lines``, outermost
        first where they nest: from the pruned index when every one of ``lines`` is one it
        was pruned to (a node holding a point on such a line spans it, so it was indexed);
        else every node of these types in the file (``walk``)."""
        if self.lines is None or not lines <= set(self.lines):
            return self.walk(*types)
        return sorted(self.nodes(*types), key=_outer_first)

    def qualname(self, node: ast.AST) -> str | None:
        """The imported name an attribute chain stands for (th.cuda.x -> torch.cuda.x)."""
        return self.bindings.qualname_of(node)

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.index.span(node)

    def source(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def fix_context(self, qualname: str = "", target: str | None = None) -> FixContext:
        return FixContext(self.text, self.index, self.bindings, qualname, target)

    def report(
        self, rule: Rule, start: int, end: int, values: dict, fix: Fix | None, held: str | None = None
    ) -> None:
        """Record a finding; ``held``: why its (unsafe) fix waits for --unsafe-fixes (the
        finding is then assisted)."""
        key = (rule.code, start, end)
        if key in self._seen:
            return
        self._seen.add(key)
        symbol = symbol_of(values)
        finding = finding_at(
            rule,
            self.index,
            self.rel,
            start,
            end,
            values,
            fix,
            symbol=symbol,
            guarded=self.guards.covers(start, symbol),
            target=self.target,
            decision=self.decisions.at(start) or 0,
        )
        if held is not None and fix is not None:
            finding = finding.held_back("assisted", fix, held)
        self.findings.append(finding)

    @property
    def devices(self) -> DeviceNames:
        """How portable rewrites name the device in this file (scan/python/device_names.py)."""
        if self._devices is None:
            self._devices = DeviceNames(self, self.file_devices)
        return self._devices

    @property
    def guards(self) -> Guards:
        if self._guards is None:
            self._guards = find_guards(self.tree, self.index)
        return self._guards

    @property
    def decisions(self) -> SpanIndex[int]:
        """The device branches of the file (scan/python/decisions.py)."""
        if self._decisions is None:
            self._decisions = decision_spans(self)
        return self._decisions

    def report_node(self, rule: Rule, node: ast.AST, values: dict, fix: Fix | None) -> None:
        start, end = self.span(node)
        self.report(rule, start, end, values, fix)


def _hit_lines(text: str, index: LineIndex, hit, bindings: Bindings) -> list[int]:
    lines = {index.position(pos)[0] for pos in hit.hit_offsets(text)}
    names = set()
    for b in bindings.names.values():
        node = b.node
        if any(node.lineno <= ln <= (node.end_lineno or node.lineno) for ln in lines):
            names.add(b.local)
    if names:
        pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b")
        lines |= {index.position(m.start())[0] for m in pattern.finditer(text)}
    return sorted(lines)


def partial_target(f: PyFile, call: ast.Call) -> tuple[ast.expr, list[ast.expr]]:
    """The function a call calls and its positional arguments, seeing through
    `functools.partial(F, *args, **kw)` (which binds F's arguments: kornia's
    `autocast = partial(torch.amp.autocast, "cuda")`)."""
    if call.args and f.qualname(call.func) == "functools.partial":
        return call.args[0], call.args[1:]
    return call.func, call.args


_FAR = 1 << 62


def _outer_first(node: ast.AST) -> tuple[int, int, int, int]:
    """Sort key: by start, the larger of two nodes starting together first (a match_case,
    which has no position, at its pattern's)."""
    at = node if hasattr(node, "lineno") else getattr(node, "pattern", node)
    return (
        getattr(at, "lineno", 0),
        getattr(at, "col_offset", 0),
        -getattr(at, "end_lineno", _FAR),
        -getattr(at, "end_col_offset", _FAR),
    )


def walk_by_type(tree: ast.AST) -> dict[type, list[tuple[int, ast.AST]]]:
    """The nodes of ``tree`` by type, each with its position in ``ast.walk`` order (the
    context and operator singletons aside: no pass asks for them)."""
    out: dict[type, list[tuple[int, ast.AST]]] = {}
    queue = [tree]
    i = 0
    while i < len(queue):
        node = queue[i]
        cls = type(node)
        found = out.get(cls)
        if found is None:
            found = out[cls] = []
        found.append((i, node))
        i += 1
        for name in _child_fields(cls):
            value = getattr(node, name, None)
            if value.__class__ is list:
                queue.extend(c for c in value if isinstance(c, ast.AST))
            elif isinstance(value, ast.AST):
                queue.append(value)
    return out


_LEAF_FIELDS = frozenset({"ctx", "op", "ops"})  # Load/Store, operators: singletons, never asked for
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    """The fields of an AST class that may hold nodes a pass looks at."""
    fields = _CHILD_FIELDS.get(cls)
    if fields is None:
        skip = _LEAF_FIELDS | ({"value", "kind"} if cls is ast.Constant else set())
        fields = _CHILD_FIELDS[cls] = tuple(n for n in getattr(cls, "_fields", ()) if n not in skip)
    return fields


def _index_nodes(tree: ast.AST, lines: list[int] | None):
    """One pass over the tree: nodes by type and parent links, pruned to ``lines``."""
    by_type: dict[type, list[ast.AST]] = {}
    parents: dict[int, ast.AST] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        by_type.setdefault(type(node), []).append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            children = value if isinstance(value, list) else (value,)
            for child in children:
                if not isinstance(child, ast.AST) or isinstance(
                    child, (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)
                ):
                    continue
                if lines is not None and isinstance(child, ast.expr | ast.stmt):
                    # a decorated def/class starts at its first decorator (its lineno is the def's)
                    decorators = getattr(child, "decorator_list", None)
                    i = bisect.bisect_left(lines, decorators[0].lineno if decorators else child.lineno)
                    if i == len(lines) or lines[i] > (child.end_lineno or child.lineno):
                        continue
                parents[id(child)] = node
                stack.append(child)
    return by_type, parents
