"""Kind ``dependency-version`` in Python: the same version verdicts for setup.py lists
(``install_requires=["torch==2.1.0"]``) as for requirement files. No fixes: the lists
are code, often built from other lists."""

from __future__ import annotations

from migrate.core.kinds import rule_kind
from migrate.core.rules import Rule
from migrate.scan.python.kinds.dependency import _containers, _strings
from migrate.scan.python.pyfile import PyFile
from migrate.scan.tables.dependency_versions import KIND, PARAMS, tokens, verdict
from migrate.scan.tables.requirements import parse_requirement


@rule_kind(KIND, engine="python", params=PARAMS, tokens=tokens,
           paths=("setup.py", "setup_*.py", "setup-*.py"))
def run(f: PyFile, rules: list[Rule]) -> None:
    reqs = []
    for container in _containers(f):
        for node in _strings(container):
            req = parse_requirement(node.value, 0, len(node.value))
            if req is not None:
                reqs.append((node, req))
    names = {req.name: node.value for node, req in reqs}
    for node, req in reqs:
        for rule in rules:
            want = verdict(rule, req.name, node.value, names)
            if want is not None:
                spec = node.value[req.spec_start:req.spec_end].strip()
                f.report_node(rule, node, {"package": req.raw_name, "spec": spec,
                                           "version": want}, None)
