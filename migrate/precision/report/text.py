"""Text, JSON, JUnit XML and Markdown renderings of a ComparisonResult.

The metric columns come from the metric registry (``metrics.columns()``): a registered
metric shows up in every format with no edit here.
"""

from __future__ import annotations

from xml.etree import ElementTree as ET

from migrate.core.display import xml_text
from migrate.core.strict_json import dumps
from migrate.precision import metrics
from migrate.precision.hint import divergence_context, replay_note
from migrate.precision.replay_backward import lead_text

VERDICT = {"pass": "PASS", "warn": "WARN", "fail": "FAIL", "missing": "MISSING"}
_ORDER = {"fail": 0, "missing": 1, "warn": 2, "pass": 3}


def fmt(value, spec: str = ".3g") -> str:
    return "-" if value is None else format(value, spec)


def label(e: dict) -> str:
    rank = f"rank{e['rank']} " if "rank" in e else ""
    return f"{rank}{e['name']}#{e['call']} {e['kind']}[{e['index']}]"


def dtypes(e: dict) -> str:
    return e["dtype"] if e["dtype"] == e["ref_dtype"] else f"{e['ref_dtype']}->{e['dtype']}"


def used_columns(entries: list[dict]) -> list:
    """The registered metric columns that hold a value in at least one entry."""
    return [c for c in metrics.columns() if any(e.get(c.field) is not None for e in entries)]


def failures_first(entries: list[dict]) -> list[dict]:
    return sorted(entries, key=lambda e: _ORDER.get(e["status"], 9))


def entry_line(e: dict) -> str:
    cols = " ".join(
        f"{c.field}={fmt(e.get(c.field), c.fmt)}" for c in metrics.columns() if e.get(c.field) is not None
    )
    line = f"{VERDICT[e['status']]:<7} {label(e)} {dtypes(e)} {e['shape']} {cols}".rstrip()
    if e.get("nan") or e.get("inf"):
        line += f" nan={e['nan']} inf={e['inf']}"
    return line + (f"  ({e['reason']})" if e["reason"] else "")


def summary_line(result) -> str:
    c = result.counts()
    verdict = "PASS" if result.passed else "FAIL"
    what = "replay" if result.replay else "gate"
    if result.replay and result.inconclusive:
        verdict = "INCONCLUSIVE"
    text = (
        f"{verdict} {what}: {len(result.violations)} violation(s), allowed "
        f"{result.allowed_violations}; {c['pass']} pass, {c['warn']} warn, "
        f"{c['fail']} fail, {c['missing']} missing"
    )
    prec = result.precision or {}
    if prec.get("reference") or prec.get("target"):
        text += f"; judged as {prec.get('reference')} vs {prec.get('target')} (profile {prec.get('profile')})"
    return text


def locus_line(result) -> str:
    if result.replay:
        c = result.culprit
        if c:
            return f"culprit: {c['name']}#{c['call']}{culprit_detail(c)}"
        if result.inconclusive:
            return f"culprit: unknown ({result.inconclusive})"
        backward = result.replay_stats.get("backward") or {}
        if backward.get("failing"):
            return f"culprit: {lead_text(backward)}"
        skipped = result.replay_stats.get("not_replayed") or []
        text = "culprit: none" + (
            f" among the replayed modules ({len(skipped)} calls not replayed: {', '.join(skipped[:5])})"
            if skipped
            else ""
        )
        if backward:
            text += (
                f"; {backward['compared']} gradient(s) checked by a plain forward and backward "
                "(not replayed): none fails"
            )
        return text
    d = result.first_divergence
    rank = f"rank{d['rank']} " if d and "rank" in d else ""
    text = f"first divergence: {rank}{d['name']}#{d['call']} {d['kind']}" if d else "first divergence: none"
    if d and d.get("tied"):
        text += (
            f" (a parameter tied with {', '.join(d['tied'])}: its gradient sums every use, so "
            "the wrong use may be any of them)"
        )
    if result.weights:
        text = f"root cause: {result.weights[0]['reason']}; " + text
    return text


def culprit_detail(c: dict) -> str:
    """Where inside the culprit module: the torch call, or its own code before a child."""
    if c.get("api"):
        api = c["api"]
        return f" at {api['function']}#{api['call']} ({api.get('location') or '?'})"
    if c.get("own_code"):
        at = ""
        if c.get("precision"):
            at = f"; seen at {c['precision']}, its children given the reference's outputs"
        return f" (its own code, before {c['own_code']['before']}{at})"
    return ""


def rank_lines(result) -> list[str]:
    out = []
    for r in result.ranks:
        c, d = r["summary"], r["first_divergence"]
        out.append(
            f"{'PASS' if r['passed'] else 'FAIL'} rank{r['rank']}: {c['pass']} pass, "
            f"{c['fail']} fail, {c['missing']} missing; first divergence "
            f"{d['name'] + '#' + str(d['call']) if d else 'none'}"
        )
    return out


def _note(result) -> str:
    first = result.first_divergence
    return replay_note(result.replay_command, first["kind"], divergence_context(first, result.entries))


def render_text(result) -> str:
    lines = [entry_line(e) for e in failures_first(result.entries)]
    lines += [w["reason"] for w in result.weights]
    lines += rank_lines(result)
    lines.append(locus_line(result))
    if result.replay_command and result.first_divergence and not result.replay:
        lines.append(_note(result))
    lines.append(summary_line(result))
    return "\n".join(lines) + "\n"


def render_json(result) -> str:
    return dumps(result.to_dict(), indent=1) + "\n"


def render_junit(result) -> str:
    suite = ET.Element("testsuite", name="migrate.replay" if result.replay else "migrate.compare")
    failing = {"fail", "missing"} if result.fail_on_missing else {"fail"}
    failures = skipped = 0
    for e in result.entries:
        case = ET.SubElement(
            suite, "testcase", classname=e["name"], name=f"{e['kind']}[{e['index']}]#{e['call']}"
        )
        if e["status"] in failing:
            ET.SubElement(case, "failure", message=e["reason"]).text = entry_line(e)
            failures += 1
        elif e["status"] == "missing":
            ET.SubElement(case, "skipped", message=e["reason"])
            skipped += 1
        else:
            ET.SubElement(case, "system-out").text = entry_line(e)
    for w in result.weights:
        case = ET.SubElement(suite, "testcase", classname=w["name"], name="weights")
        ET.SubElement(case, "failure", message=w["reason"])
        failures += 1
    gate = ET.SubElement(suite, "testcase", classname="gate", name="gate")
    if not result.passed:
        ET.SubElement(gate, "failure", message=summary_line(result)).text = locus_line(result)
        failures += 1
    suite.set("tests", str(len(suite.findall("testcase"))))
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    suite.set("errors", "0")
    for node in suite.iter():  # names from a dump: characters XML 1.0 cannot hold, escaped
        node.attrib.update({k: xml_text(str(v)) for k, v in node.attrib.items()})
        if node.text:
            node.text = xml_text(node.text)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def _md_row(e: dict, cols: list) -> str:
    values = " | ".join(fmt(e.get(c.field), c.fmt) for c in cols)
    return (
        f"| {VERDICT[e['status']]} | `{e['name']}#{e['call']}` | {e['kind']}[{e['index']}] "
        f"| {dtypes(e)} | {values} | {e['reason']} |"
    )


def render_markdown(result, limit: int = 20) -> str:
    verdict = "PASS" if result.passed else "FAIL"
    out = [
        f"### {verdict}: precision {'replay' if result.replay else 'comparison'}",
        "",
        f"`{result.reference}` vs `{result.target}`",
        "",
        summary_line(result),
        "",
        f"**{locus_line(result)}**",
        "",
    ]
    if result.replay_command and result.first_divergence and not result.replay:
        out += [_note(result), ""]
    out += [f"- {w['reason']}" for w in result.weights[:limit]]
    out += [f"- {line}" for line in rank_lines(result)]
    shown = [e for e in failures_first(result.entries) if e["status"] in ("fail", "missing")]
    if not shown:
        shown = sorted((e for e in result.entries if e.get("cosine") is not None), key=lambda e: e["cosine"])[
            :5
        ]
    cols = used_columns(shown)
    out += [
        "",
        "| verdict | module | tensor | dtype | " + " | ".join(c.label for c in cols) + " | reason |",
        "|---" * (len(cols) + 5) + "|",
    ]
    out += [_md_row(e, cols) for e in shown[:limit]]
    if len(shown) > limit:
        out.append(f"\n{len(shown) - limit} more not shown; see the HTML or JSON report.")
    return "\n".join(out) + "\n"
