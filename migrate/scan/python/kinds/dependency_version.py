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


@rule_kind(
    KIND, engine="python", params=PARAMS, tokens=tokens, paths=("setup.py", "setup_*.py", "setup-*.py")
)
def run(f: PyFile, rules: list[Rule]) -> None:
    reqs = []
    for container in _containers(f):
        for node in _strings(container):
            req = parse_requirement(str(node.value), 0, len(str(node.value)))
            if req is not None:
                reqs.append((node, str(node.value), req))
    names = {req.name: text for _, text, req in reqs}
    for node, text, req in reqs:
        for rule in rules:
            want = verdict(rule, req.name, text, names)
            if want is not None:
                spec = text[req.spec_start : req.spec_end].strip()
                f.report_node(rule, node, {"package": req.raw_name, "spec": spec, "version": want}, None)
