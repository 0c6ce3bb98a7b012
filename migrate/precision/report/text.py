"""Text, JSON, JUnit XML and Markdown renderings of a ComparisonResult."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

VERDICT = {"pass": "PASS", "warn": "WARN", "fail": "FAIL", "missing": "MISSING"}


def _fmt(value, spec: str = ".3g") -> str:
    return "-" if value is None else format(value, spec)


def label(e: dict) -> str:
    return f"{e['name']}#{e['call']} {e['kind']}[{e['index']}]"


def entry_line(e: dict) -> str:
    dtypes = e["dtype"] if e["dtype"] == e["ref_dtype"] else f"{e['ref_dtype']}->{e['dtype']}"
    line = (f"{VERDICT[e['status']]:<7} {label(e)} {dtypes} {e['shape']} "
            f"cos={_fmt(e['cosine'], '.8f')} max_abs={_fmt(e['max_abs'])} "
            f"max_rel={_fmt(e['max_rel'])} rmse={_fmt(e['rmse'])} "
            f"mismatch={_fmt(e['mismatch_ratio'])}")
    if e.get("nan") or e.get("inf"):
        line += f" nan={e['nan']} inf={e['inf']}"
    return line + (f"  ({e['reason']})" if e["reason"] else "")


def summary_line(result) -> str:
    c = result.counts()
    verdict = "PASS" if result.passed else "FAIL"
    what = "replay" if result.replay else "gate"
    return (f"{verdict} {what}: {len(result.violations)} violation(s), allowed "
            f"{result.allowed_violations}; {c['pass']} pass, {c['warn']} warn, "
            f"{c['fail']} fail, {c['missing']} missing")


def locus_line(result) -> str:
    if result.replay:
        c = result.culprit
        return f"culprit: {c['name']}#{c['call']}" if c else "culprit: none"
    d = result.first_divergence
    return f"first divergence: {d['name']}#{d['call']} {d['kind']}" if d else \
        "first divergence: none"


def render_text(result) -> str:
    lines = [entry_line(e) for e in result.entries]
    lines += [locus_line(result), summary_line(result)]
    return "\n".join(lines) + "\n"


def render_json(result) -> str:
    return json.dumps(result.to_dict(), indent=1, allow_nan=True) + "\n"


def render_junit(result) -> str:
    c = result.counts()
    suite = ET.Element("testsuite", name="migrate.replay" if result.replay else "migrate.compare",
                       tests=str(len(result.entries)), failures=str(c["fail"]),
                       skipped=str(c["missing"]), errors="0")
    for e in result.entries:
        case = ET.SubElement(suite, "testcase", classname=e["name"],
                             name=f"{e['kind']}[{e['index']}]#{e['call']}")
        if e["status"] == "fail":
            ET.SubElement(case, "failure", message=e["reason"]).text = entry_line(e)
        elif e["status"] == "missing":
            ET.SubElement(case, "skipped", message=e["reason"])
        else:
            ET.SubElement(case, "system-out").text = entry_line(e)
    gate = ET.SubElement(suite, "testcase", classname="gate", name="gate")
    if not result.passed:
        ET.SubElement(gate, "failure", message=summary_line(result)).text = locus_line(result)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") \
        + "\n"


def _md_row(e: dict) -> str:
    return (f"| {VERDICT[e['status']]} | `{e['name']}#{e['call']}` | {e['kind']}[{e['index']}] "
            f"| {e['ref_dtype']}→{e['dtype']} | {_fmt(e['cosine'], '.6f')} | "
            f"{_fmt(e['max_abs'])} | {_fmt(e['mismatch_ratio'])} | {e['reason']} |")


def render_markdown(result, limit: int = 20) -> str:
    verdict = "PASS" if result.passed else "FAIL"
    out = [f"### {verdict}: precision {'replay' if result.replay else 'comparison'}", "",
           f"`{result.reference}` vs `{result.target}`", "", summary_line(result), "",
           f"**{locus_line(result)}**", ""]
    shown = [e for e in result.entries if e["status"] in ("fail", "missing")][:limit]
    if not shown:
        shown = sorted((e for e in result.entries if e["cosine"] is not None),
                       key=lambda e: e["cosine"])[:5]
    out += ["| verdict | module | tensor | dtype | cosine | max abs | mismatch | reason |",
            "|---|---|---|---|---|---|---|---|"] + [_md_row(e) for e in shown]
    return "\n".join(out) + "\n"
