"""A rule's documentation, rendered from its YAML row: the text `migrate rules ID` prints,
the docs/rules.md page and the SARIF rule help all come from here.

Doc sections follow ruff's: What it does / Why is this bad? / Example / Fix safety. The
``example`` section is markdown when it contains a code fence; otherwise it is code and is
fenced in the language of the rule's first file kind. Examples (``examples:`` in the row)
render as Before/After pairs and "No change" cases.
"""

from __future__ import annotations

from collections.abc import Sequence

from migrate.core.rules import DOC_OPTIONAL, DOC_SECTIONS, Rule

HEADINGS = {
    "what": "What it does",
    "why": "Why is this bad?",
    "example": "Example",
    "fix_safety": "Fix safety",
    "references": "References",
}
LANGUAGES = {
    "python": "python",
    "shell": "sh",
    "docker": "dockerfile",
    "dockerfile": "dockerfile",
    "yaml": "yaml",
    "toml": "toml",
    "requirements": "text",
    "text": "text",
}
FIX = {
    "auto": ("safe", "Fix is always available and safe: `migrate apply` makes it."),
    "assisted": (
        "unsafe",
        "Fix is available but may change behaviour: "
        "`migrate apply --unsafe-fixes` makes it; review the result.",
    ),
    "manual": ("none", "No automatic fix: a person must port this code."),
    "perf": ("none", "Optional advice: the code runs on NPU as it is."),
}
PERF_FIX = (
    "unsafe",
    "Optional advice; a fix exists but changes numerics: `migrate apply "
    "--unsafe-fixes --select CODE` makes it (only when the rule is selected by name).",
)


def fix_availability(rule: Rule) -> str:
    """'safe', 'unsafe' or 'none', from the rule's category (perf: whether it has a fix)."""
    if rule.category == "perf" and rule.fix_title:
        return PERF_FIX[0]
    return FIX.get(rule.category, ("none", ""))[0]


def language(rule: Rule) -> str:
    return LANGUAGES.get(rule.files[0] if rule.files else "python", "text")


def anchor(rule: Rule) -> str:
    """GitHub's heading anchor for the heading rule_markdown writes."""
    return f"{rule.code.lower()}-{rule.name}"


def short_description(rule: Rule) -> str:
    """One sentence: the first sentence of 'what', else the fix title, else the name."""
    what = rule.doc.get("what", "").strip()
    if what:
        first = what.split("\n\n")[0].replace("\n", " ").strip()
        end = first.find(". ")
        return first[: end + 1] if end != -1 else first
    return rule.fix_title or rule.name.replace("-", " ")


def _fence(code: str, lang: str) -> str:
    ticks = "````" if "```" in code else "```"
    return f"{ticks}{lang}\n{code.rstrip()}\n{ticks}"


def examples_markdown(rule: Rule, level: int) -> list[str]:
    if not rule.examples:
        return []
    lang = language(rule)
    out = ["#" * level + " Examples", ""]
    for ex in rule.examples:
        if "before" in ex and "after" in ex:
            out += ["Before:", "", _fence(str(ex["before"]), lang), ""]
            target = ex.get("target", "npu")
            out += [f"After (`--target {target}`):", "", _fence(str(ex["after"]), lang), ""]
            if "portable" in ex:
                out += [
                    "After (`--target portable`, the default):",
                    "",
                    _fence(str(ex["portable"]), lang),
                    "",
                ]
        elif "before" in ex:  # manual rules: flagged, nothing rewrites it
            out += ["Flagged (no automatic fix):", "", _fence(str(ex["before"]), lang), ""]
        if "noop" in ex:
            out += ["No change (the rule must not fire):", "", _fence(str(ex["noop"]), lang), ""]
    return out


def doc_markdown(rule: Rule, level: int = 2) -> str:
    """The doc sections and examples, headings at ``level``."""
    out: list[str] = []
    for key in (*DOC_SECTIONS, *DOC_OPTIONAL):
        body = rule.doc.get(key, "").strip()
        if not body:
            continue
        if key == "example" and "```" not in body:
            body = _fence(body, language(rule))
        out += ["#" * level + " " + HEADINGS[key], "", body, ""]
    out += examples_markdown(rule, level)
    return "\n".join(out).rstrip() + "\n"


def rule_markdown(rule: Rule, level: int = 1) -> str:
    """The whole page of one rule, ruff `rule` style."""
    head = [
        "#" * level + f" {rule.code} {rule.name}",
        "",
        (PERF_FIX if rule.category == "perf" and rule.fix_title else FIX.get(rule.category, ("", "")))[1],
        "",
        f"- Category: **{rule.category}** · Impact: {rule.impact} · Kind: `{rule.kind}` · "
        f"Files: {', '.join(rule.files)}" + (f" · Defined in `rules/{rule.source}`" if rule.source else ""),
        f"- Message: {rule.message}",
    ]
    if rule.fix_title:
        head.append(f"- Fix: {rule.fix_title}")
    if rule.imports:
        head.append("- Adds: " + ", ".join(f"`{i}`" for i in rule.imports))
    return "\n".join(head) + "\n\n" + doc_markdown(rule, level + 1)


def index_markdown(rules: Sequence[Rule]) -> str:
    lines = ["| Code | Name | Category | Fix | Kind |", "|---|---|---|---|---|"]
    for r in rules:
        lines.append(
            f"| [{r.code}](#{anchor(r)}) | {r.name} | {r.category} | {fix_availability(r)} | `{r.kind}` |"
        )
    return "\n".join(lines) + "\n"


def rules_page(rules: Sequence[Rule]) -> str:
    """docs/rules.md: an index table, then every rule's page."""
    parts = [
        "# Rules\n",
        "<!-- Generated by `migrate rules --format markdown`; edit rules/*.yaml instead. -->\n",
        f"{len(rules)} rules. Categories: **auto** (safe fix, `migrate apply`), **assisted** "
        "(fix with `--unsafe-fixes`, review it), **manual** (a person must act), **perf** "
        "(optional NPU-affinity advice, opt-in with `--extend-select MIG9`, never required "
        "work). Impacts (what the code does on "
        "an NPU as it is): crash, behaviour, noop, perf.\n",
        index_markdown(rules),
    ]
    parts += [rule_markdown(r, level=2) for r in rules]
    return "\n".join(parts)


def rule_to_dict(rule: Rule) -> dict:
    return {
        "code": rule.code,
        "name": rule.name,
        "kind": rule.kind,
        "category": rule.category,
        "impact": rule.impact,
        "effort": dict(rule.effort),
        "fix": fix_availability(rule),
        "message": rule.message,
        "fix_title": rule.fix_title,
        "imports": list(rule.imports),
        "files": list(rule.files),
        "doc": dict(rule.doc),
        "examples": [dict(e) for e in rule.examples],
        "params": rule.params,
        "source": rule.source,
    }
