"""Scan the non-Python files of a PyTorch project: scripts, images, CI, requirements, kernels.

    file_kind(path) -> "shell" | "docker" | "make" | "yaml" | "conda" | "requirements" |
                       "pyproject" | "setup-cfg" | "cuda" | "env" | "cmake" | None
    scan_text_file(text, rel, kind, rules) -> list[Finding]

Each rule kind's matcher is a module of migrate/scan/text/kinds/, found by the kind
registry (migrate.core.kinds); a new kind is a new module. Matchers see the text with comments
blanked out (text_mask), so every offset is an offset into the exact text: edits keep CRLF
line endings and everything else byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePath

from migrate.core.fileio import read_head
from migrate.core.findings import Finding, LineIndex
from migrate.core.rules import Rule
from migrate.core.kinds import kinds_of
from migrate.scan.suppress import drop_suppressed, masked_comments
from migrate.scan.text.mask import mask_comments
from migrate.scan.text.prefilter import active_rules
from migrate.scan.text.textfile import TextFile, applies

TEXT_KINDS = ("shell", "docker", "make", "yaml", "conda", "requirements", "pyproject",
              "setup-cfg", "cuda", "env", "cmake")
_SUFFIX = {
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".ksh": "shell", ".slurm": "shell",
    ".sbatch": "shell", ".dockerfile": "docker",
    ".mk": "make", ".yml": "yaml", ".yaml": "yaml", ".cu": "cuda", ".cuh": "cuda",
    ".env": "env", ".cmake": "cmake",
}
_NAMES = {
    "dockerfile": "docker", "containerfile": "docker", "makefile": "make",
    "gnumakefile": "make", "cmakelists.txt": "cmake", "pyproject.toml": "pyproject", "setup.cfg": "setup-cfg",
    ".env": "env", ".envrc": "shell", "environment.yml": "conda", "environment.yaml": "conda",
}
_SHEBANG = re.compile(rb"^#![ \t]*(?:/usr)?/bin/(?:env[ \t]+(?:-\S+[ \t]+)*)?(?:ba|z|da|k)?sh\b")


def file_kind(path: PurePath) -> str | None:
    """The text-file kind of ``path`` by its name (and, for files without a suffix, by a
    shell shebang read from disk); None for Python, ONNX and anything else."""
    name = path.name.lower()
    if name in _NAMES:
        return _NAMES[name]
    if name.startswith(("dockerfile.", "dockerfile-", "containerfile.")):
        return "docker"
    if name.endswith(".txt") and ("requirements" in name or name.startswith("constraints")):
        return "requirements"
    if name.endswith((".txt", ".in")) and path.parent.name.lower() == "requirements":
        return "requirements"
    if name.endswith(".in") and name.startswith(("constraints", "requirements")):
        return "requirements"
    suffix = PurePath(name).suffix
    if suffix in _SUFFIX:
        return _SUFFIX[suffix]
    if name.startswith(".env."):
        return "env"
    if not suffix and not name.startswith("."):
        return _shebang_kind(path)
    return None


def _shebang_kind(path: PurePath) -> str | None:
    return "shell" if _SHEBANG.match(read_head(str(path), 128)) else None


def scan_text_file(text: str, rel: str, kind: str, rules: Sequence[Rule]) -> list[Finding]:
    """Findings, with fixes where a fix exists, for one decoded non-Python file.

    Only rules whose ``files`` list holds ``kind`` apply; ``# migrate: ignore[CODE]`` on a
    line suppresses findings starting there. Never raises on odd text.
    """
    if kind not in TEXT_KINDS:
        return []
    rules = active_rules(text, [r for r in rules if applies(r, kind)])
    if not rules:
        return []
    tf = TextFile(text=text, masked=mask_comments(text, kind), rel=rel, kind=kind,
                  index=LineIndex(text))
    findings: list[Finding] = []
    for spec in kinds_of("text"):
        group = [r for r in rules if r.kind == spec.name]
        if group:
            findings += spec.run(tf, group)
    findings = drop_suppressed(findings, masked_comments(text, tf.masked, tf.index))
    findings.sort(key=Finding.sort_key)
    return findings


