"""Text rendering of a sensitivity report: verdict lines first, then the ranking."""

from __future__ import annotations

from migrate.core.strict_json import dumps


def render_json(r: dict) -> str:
    """The report as strict JSON (docs/contracts.md §5): non-finite numbers are null."""
    return dumps(r, indent=1) + "\n"


def _fmt(value, spec=".3g") -> str:
    return "-" if value is None else format(value, spec)


def _effect(e: dict) -> str:
    parts = [f"rel_err={_fmt(e.get('rel_err'))}", f"cosine={_fmt(e.get('cosine'), '.6f')}"]
    if e.get("top1_agreement") is not None:
        parts.append(f"top1={e['top1_agreement']:.3f}")
    if e.get("loss_delta") is not None:
        parts.append(f"loss_delta={e['loss_delta']:+.3g}")
    if e.get("nonfinite"):
        parts.append(f"nonfinite={e['nonfinite']}")
    return " ".join(parts)


def _why(why: dict | None) -> str:
    if not why:
        return ""
    share = why.get("error_share")
    parts = [f"share {share:.0%}" if share is not None else "share -"]
    parts.append(f"input max/rms {_fmt(why.get('input_outlier'), '.3g')}")
    parts.append(f"weight max/rms {_fmt(why.get('weight_outlier'), '.3g')}")
    return "  why: " + ", ".join(parts)


def render_text(r: dict, limit: int = 25) -> str:
    keep = r["keep"]
    verdict = "PASS" if keep["within_limit"] else "FAIL"
    lines = [
        f"{verdict} sensitivity to {r['format']} by {r['unit']}: keep {len(keep['units'])} "
        f"of {r['units']['measured']} units in high precision "
        f"({keep['params_share']:.1%} of parameters); lowered rest: "
        f"{_effect(keep['effect_after'] or {})} (limit rel_err <= "
        f"{keep['limit']['rel_err_max']:g})",
        f"whole model in {r['format']}: {_effect(r['whole_model'] or {})}",
    ]
    cal = r["calibration"]
    if not cal["stable"]:
        lines.append(f"warning: {cal['note']}")
    if r["units"]["skipped"]:
        lines.append(f"note: {r['units']['skipped']} units not measured (--max-units)")
    lines.append(
        "ranking (most sensitive first; why: share of the whole model's lowered error, "
        "max|x|/RMS of the unit's inputs and weights):"
    )
    for row in r["ranking"][:limit]:
        mark = "KEEP" if row["name"] in keep["units"] else "    "
        lines.append(f"{row['rank']:>4} {mark} {row['name']}  {_effect(row['effect'])}{_why(row.get('why'))}")
    if len(r["ranking"]) > limit:
        lines.append(f"     ... {len(r['ranking']) - limit} more (--format json)")
    big = [o for o in r["outliers"] if o["ratio"] >= 10]
    for o in big[:5]:
        lines.append(
            f"outlier channels at {o['module']} input: max {o['max']:.3g} = "
            f"{o['ratio']:.0f}x the median channel (channels {o['top_channels']})"
        )
    what = r.get("files", {}).get("keeps") or {}
    for key in ("keep_dtype", "modify_mixlist", "autocast", "quant_skip"):
        if r.get("files", {}).get(key):
            keeps = f": keeps {what[key]}" if what.get(key) else ""
            lines.append(f"wrote {r['files']['dir']}/{r['files'][key]}{keeps}")
    if r.get("files", {}).get("error"):
        lines.append(f"error: {r['files']['error']}")
    return "\n".join(lines) + "\n"
