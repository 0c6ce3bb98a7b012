"""Regenerate the lists the docs show from the registries they describe.

    python tools/build_docs.py            # rewrite the generated blocks in place
    python tools/build_docs.py --check    # exit 1 naming each stale block (tests run this)

A generated block sits between two HTML comments (invisible in rendered Markdown)::

    <!-- begin generated: NAME (tools/build_docs.py) -->...<!-- end generated: NAME -->

and holds what BLOCKS[NAME] renders from its registry: ONNX decompositions (README), the
emulator's fused operators and optimizers (docs/emulate.md), the precision metrics
(docs/precision.md), the metric fields of a compare entry (docs/contracts.md §5), the
doctor's check ids (docs/contracts.md §8) and the findings `migrate perf` knows
(docs/perf.md). A new decomposition, fused op, metric or doctor check shows up in the
docs by running this; the freshness test (tests/meta/test_docs_current.py) fails until
then. docs/rules.md is `migrate rules --format markdown`.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _first_line(obj: object, what: str) -> str:
    """The first sentence of a member's docstring: what the docs show for it. A member
    without one fails the build (a list entry must say what it is)."""
    doc = " ".join((getattr(obj, "__doc__", None) or "").split())
    if not doc:
        raise SystemExit(f"build_docs: {what} has no docstring to show in the docs")
    return re.split(r"(?<=[.])\s", doc, maxsplit=1)[0]


def decompositions() -> str:
    from migrate.ops.decompositions import DECOMPOSITIONS

    ops: list[str] = []
    for _, rule in DECOMPOSITIONS.items():
        if rule.op not in ops:
            ops.append(rule.op)
    return ", ".join(ops[:-1]) + " and " + ops[-1] if len(ops) > 1 else "".join(ops)


def fused_ops() -> str:
    from migrate.emulate.fused import FUSED
    from migrate.emulate.optim import OPTIMIZERS

    lines = [
        f"  - `torch_npu.{name}`: {_first_line(getattr(fn, 'reference', fn), name)}"
        for name, fn in FUSED.items()
    ]
    lines.append("  - optimizers: " + ", ".join(f"`torch_npu.optim.{n}`" for n in OPTIMIZERS))
    return "\n" + "\n".join(lines) + "\n"


def metrics() -> str:
    from migrate.precision.metrics import specs

    lines = []
    for spec in specs():
        parts = []
        if spec.tier == "stats":
            parts.append("stats-only dumps" + (f", fills `{spec.field}`" if spec.field != spec.name else ""))
        if spec.label and spec.label != spec.name:
            parts.append(f'column "{spec.label}"')
        if spec.gate_keys:
            keys = (*spec.gate_keys, spec.noise_key) if spec.noise_key else spec.gate_keys
            parts.append("gate: " + ", ".join(f"`{k}`" for k in keys))
        shown = f" ({'; '.join(parts)})" if parts else ""
        lines.append(f"- `{spec.name}`{shown}: {_first_line(spec.fn, f'metric {spec.name}')}")
    return "\n" + "\n".join(lines) + "\n"


def metric_fields() -> str:
    from migrate.precision.metrics import fields

    return ", ".join(f'`"{f}"`' for f in fields())


def perf_findings() -> str:
    from migrate.perf.catalog import catalog

    lines = ["", "| ID | name | kind | from | what it finds | fix made by |", "|---|---|---|---|---|---|"]
    for e in catalog().values():
        rule = f"`{e.rule}`" if e.rule else "-"
        lines.append(f"| {e.id} | `{e.name}` | {e.kind} | {', '.join(e.sources)} | {e.title} | {rule} |")
    return "\n".join(lines) + "\n"


def perf_chips() -> str:
    from migrate.perf.analyze.chips import DTYPES, chips

    lines = ["", "| chip | " + " | ".join(DTYPES) + " | source |", "|---|" + "---:|" * len(DTYPES) + "---|"]
    for c in chips():
        peaks = " | ".join(f"{c.peak_tflops[d]:g}" if d in c.peak_tflops else "-" for d in DTYPES)
        lines.append(f"| {c.id} | {peaks} | {' '.join(c.source.split())} |")
    return "\n".join(lines) + "\n"


def doctor_checks() -> str:
    from migrate.doctor.checks import ids_by_group

    return ", ".join(
        f"`{group}` ({', '.join(f'`{i}`' for i in ids)})" for group, ids in ids_by_group().items()
    )


BLOCKS: dict[str, tuple[str, Callable[[], str]]] = {
    "decompositions": ("README.md", decompositions),
    "fused-ops": ("docs/emulate.md", fused_ops),
    "metrics": ("docs/precision.md", metrics),
    "metric-fields": ("docs/contracts.md", metric_fields),
    "perf-findings": ("docs/perf.md", perf_findings),
    "perf-chips": ("docs/perf.md", perf_chips),
    "doctor-checks": ("docs/contracts.md", doctor_checks),
}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- begin generated: {re.escape(name)} \(tools/build_docs.py\) -->)"
        rf"(.*?)(<!-- end generated: {re.escape(name)} -->)",
        re.S,
    )


def render(text: str, name: str, body: str) -> str:
    pattern = _pattern(name)
    if not pattern.search(text):
        raise SystemExit(f"build_docs: no generated block {name!r} in its file")
    return pattern.sub(lambda m: m.group(1) + body + m.group(3), text, count=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a block is stale")
    args = ap.parse_args(argv)
    stale = []
    for name, (rel, build) in BLOCKS.items():
        path = REPO / rel
        text = path.read_text(encoding="utf-8")
        new = render(text, name, build())
        if new == text:
            continue
        if args.check:
            stale.append(f"{rel}: block {name!r} is stale")
        else:
            path.write_text(new, encoding="utf-8")
            print(f"updated {rel} ({name})")
    for line in stale:
        print(line, file=sys.stderr)
    if stale:
        print("run: python tools/build_docs.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
