"""Kind ``call-argument-pattern``: calls whose arguments reveal CUDA code.

``torch.utils.cpp_extension.load(name, sources=["k.cu"])`` builds CUDA kernels. Rows give
``params.calls: {qualified.name: {keywords: [cuda_sources]}}`` and ``params.pattern``: a
call is reported when a string literal anywhere in its arguments matches the pattern, or
when one of the listed keywords is passed.
"""

from __future__ import annotations

import ast
import re

from migrate.core.kinds import param, prefilter_words, rule_kind
from migrate.core.rules import Rule
from migrate.core.schema import mapping, record, regex, strings
from migrate.scan.python.pyfile import PyFile

PARAMS = {
    "calls": mapping(
        record(keywords=strings(doc="keywords whose passing reveals CUDA code")),
        required=True,
        doc="qualified call name -> {keywords: [...]}",
    ),
    "pattern": param(str, required=True, check=regex, doc="regex an argument's string value must match"),
}


@rule_kind("call-argument-pattern", engine="python", params=PARAMS, tokens=prefilter_words)
def run(f: PyFile, rules: list[Rule]) -> None:
    table = {}
    for rule in rules:
        pattern = re.compile(rule.params["pattern"])
        for qual, spec in (rule.params.get("calls") or {}).items():
            table[qual] = (rule, pattern, set((spec or {}).get("keywords") or ()))
    for node in f.nodes(ast.Call):
        qual = f.qualname(node.func)
        if qual not in table:
            continue
        rule, pattern, keywords = table[qual]
        hits = [kw.arg for kw in node.keywords if kw.arg is not None and kw.arg in keywords]
        for arg in [*node.args, *(kw.value for kw in node.keywords)]:
            for sub in ast.walk(arg):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and pattern.search(sub.value):
                    hits.append(sub.value)
        if hits:
            f.report_node(rule, node, {"name": qual, "value": ", ".join(dict.fromkeys(hits))}, None)
