"""One parsed Python file, as the matchers see it: text, ast, bindings, spans, findings."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from migrate.findings import Edit, Finding, Fix, LineIndex
from migrate.rules import Rule
from migrate.source.bindings import Bindings, collect_bindings
from migrate.source.fixers import FixContext


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

    @classmethod
    def parse(cls, text: str, rel: str) -> PyFile:
        tree = ast.parse(text, filename=rel, type_comments=False)
        parents: dict[int, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        return cls(text, rel, tree, LineIndex(text), collect_bindings(tree), parents)

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def offset(self, line: int, byte_col: int) -> int:
        line_text = self.index.line_text(line)
        if line_text.isascii():
            return self.index.offset(line, byte_col)
        col = len(line_text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))
        return self.index.offset(line, col)

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.offset(node.lineno, node.col_offset),
                self.offset(node.end_lineno, node.end_col_offset))

    def source(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def fix_context(self, qualname: str = "", target: str | None = None) -> FixContext:
        return FixContext(self.text, self.index, self.bindings.as_map(), qualname, target)

    def report(self, rule: Rule, start: int, end: int, values: dict, fix: Fix | None) -> None:
        key = (rule.code, start, end)
        if key in self._seen:
            return
        self._seen.add(key)
        line, col = self.index.position(start)
        end_line, end_col = self.index.position(end)
        category = rule.category
        if fix is None and category != "manual":
            category = "manual"  # this occurrence has no automatic fix
        self.findings.append(Finding(
            rule=rule.code, name=rule.name, path=self.rel, line=line, column=col,
            end_line=end_line, end_column=end_col, message=rule.format_message(**values),
            category=category, fix=fix, snippet=self.index.line_text(line),
        ))

    def report_node(self, rule: Rule, node: ast.AST, values: dict, fix: Fix | None) -> None:
        start, end = self.span(node)
        self.report(rule, start, end, values, fix)


def make_fix(rule: Rule, edits: list[Edit], values: dict, imports: list[str] | None = None) -> Fix:
    return Fix(
        applicability="safe" if rule.category == "auto" else "unsafe",
        description=rule.format_fix_title(**values),
        edits=edits,
        imports=list(dict.fromkeys([*rule.imports, *(imports or [])])),
    )
