"""Rule kind ``shell-command``: regex rows over the comment-free text of a file.

    params:
      patterns: ['(?<![\\w./$-])nvidia-smi(?=[ \\t]*$)']   # Python re, MULTILINE
      replace: 'npu-smi info'      # optional; may use \\g<name> group references

A group named ``target`` marks the span reported and replaced (default: the whole match).
The message and fix title may use ``{match}`` (the target text) and any named group.
Rows for one command are written so their patterns do not overlap; each match is one
finding.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from migrate.core.errors import RuleError
from migrate.core.findings import Finding
from migrate.core.kinds import param, prefilter_words, rule_kind
from migrate.core.rules import Rule
from migrate.core.schema import regex, strings
from migrate.scan.text.textfile import TextFile

KIND = "shell-command"
PARAMS = {
    "patterns": strings(required=True, check=regex, doc="Python regexes (MULTILINE), one finding a match"),
    "replace": param(str, doc="replacement; may use \\g<name> group references"),
    "comments": param(bool, doc="match in comments too (directives such as #SBATCH)"),
}


@lru_cache(maxsize=256)
def _compile(code: str, patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    try:
        return tuple(re.compile(p, re.MULTILINE) for p in patterns)
    except re.error as exc:
        raise RuleError(f"{code}: bad pattern: {exc}") from exc


def compiled_patterns(rule: Rule) -> tuple[re.Pattern[str], ...]:
    return _compile(rule.code, tuple(str(p) for p in rule.params.get("patterns") or ()))


@rule_kind(KIND, engine="text", params=PARAMS, tokens=prefilter_words)
def scan_regex_rules(tf: TextFile, rules: Sequence[Rule]) -> list[Finding]:
    findings: list[Finding] = []
    for rule in rules:
        replace = rule.params.get("replace")
        seen: set[tuple[int, int]] = set()
        for pattern in compiled_patterns(rule):
            for m in pattern.finditer(tf.text if rule.params.get("comments") else tf.masked):
                group = "target" if "target" in pattern.groupindex else 0
                start, end = m.span(group)
                if start < 0 or (start, end) in seen:
                    continue
                seen.add((start, end))
                values = {k: v or "" for k, v in m.groupdict().items()}
                values["match"] = tf.text[start:end]
                new_text = None if replace is None else _expand(m, str(replace))
                f = tf.finding(rule, start, end, values, new_text)
                if f is not None:
                    findings.append(f)
    return findings


def _expand(m: re.Match[str], template: str) -> str | None:
    try:
        return m.expand(template)
    except (re.error, IndexError):
        return None
