"""Build rules/torch_cuda.yaml (MIG101..MIG105) from every supported torch and the torch_npu wheel.

    python tools/build_cuda_rules.py [--data DIR] [--check]
    python tools/build_cuda_rules.py --snapshot      # under each supported torch, once

1. Lists every public ``torch.cuda`` name of each supported torch: ``__all__``, public
   names defined in torch.cuda, and the public names of its submodules (amp, memory,
   graphs, streams, random, nvtx, comm, profiler, sparse, jiterator, tunable, gds,
   green_contexts). One torch is installed at a time, so each torch's list is a snapshot
   in tools/torch_cuda_names/<version>.json, written by ``--snapshot`` under that torch (the
   tests run on torch 2.13, the NPU runs torch 2.14: the table covers both).
2. Sorts every name of the snapshots into a rule with tools/cuda_rules_notes.yaml (curated
   renames, behaviour notes, names without a counterpart) and the torch_npu wheel
   (``torch.npu`` is ``torch_npu.npu``, parsed statically by tools/npu_wheel.py).
3. Checks that every target exists (torch.npu/torch_npu names in the wheel, other torch
   names in the installed torch) and refuses to write otherwise.
4. With ``--data`` (default /work/shared/data when present), compares the result with
   cuda_without_npu.txt and reports disagreements.

``--check`` exits 1 if rules/torch_cuda.yaml is out of date, and also when the installed
torch has no snapshot or lists other names than its snapshot (run ``--snapshot`` under it):
it never passes by comparing against the wrong torch. ``--notes`` and ``--out`` choose other
input and output files.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import types
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from npu_wheel import VERSION, installed_name_exists, npu_wheel, target_exists  # noqa: E402

NOTES = REPO / "tools" / "cuda_rules_notes.yaml"
OUT = REPO / "rules" / "torch_cuda.yaml"
SNAPSHOTS = REPO / "tools" / "torch_cuda_names"
SUBMODULES = (
    "amp",
    "amp.autocast_mode",
    "amp.grad_scaler",
    "amp.common",
    "memory",
    "graphs",
    "streams",
    "random",
    "nvtx",
    "comm",
    "profiler",
    "sparse",
    "jiterator",
    "tunable",
    "gds",
    "green_contexts",
    "nccl",
)


def torch_cuda_names() -> dict[str, object]:
    """Qualified public torch.cuda names -> the object, from the installed torch."""
    import torch.cuda

    names: dict[str, object] = {"torch.cuda": torch.cuda}
    for sub in ("",) + SUBMODULES:
        modname = "torch.cuda" + (f".{sub}" if sub else "")
        mod = importlib.import_module(modname)
        names[modname] = mod
        for name in _public(mod):
            names[f"{modname}.{name}"] = getattr(mod, name)
    return names


def snapshot_of(names: dict[str, object]) -> dict[str, str | None]:
    """Qualified name -> the top-level ``torch.cuda.<leaf>`` it is the same object as (an
    alias such as torch.cuda.memory.empty_cache), else None: what classification needs."""
    out: dict[str, str | None] = {}
    for qual, obj in sorted(names.items()):
        top = f"torch.cuda.{qual.rpartition('.')[2]}"
        out[qual] = top if top != qual and top in names and names[top] is obj else None
    return out


def snapshot_path(version: str) -> Path:
    return SNAPSHOTS / f"{version}.json"


def load_snapshots() -> tuple[list[str], dict[str, str | None]]:
    """(torch versions, the union of their names), from tools/torch_cuda_names/*.json."""
    versions, names = [], {}
    for path in sorted(SNAPSHOTS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        versions.append(data["torch"])
        for qual, alias in data["names"].items():
            names[qual] = names.get(qual) or alias
    if not versions:
        raise SystemExit(f"error: no snapshots in {SNAPSHOTS}: run --snapshot under each torch")
    return versions, dict(sorted(names.items()))


def snapshot_problem() -> str | None:
    """Why the installed torch's names are not what its snapshot says (None: they are)."""
    version = _torch_version()
    path = snapshot_path(version)
    if not path.exists():
        return (
            f"torch {version} has no snapshot ({path}): run "
            "`python tools/build_cuda_rules.py --snapshot` under it"
        )
    recorded = json.loads(path.read_text(encoding="utf-8"))["names"]
    live = snapshot_of(torch_cuda_names())
    if recorded != live:
        added = sorted(set(live) - set(recorded))[:5]
        gone = sorted(set(recorded) - set(live))[:5]
        return (
            f"torch {version} lists other torch.cuda names than its snapshot (new: {added}, "
            f"gone: {gone}): run `python tools/build_cuda_rules.py --snapshot` under it"
        )
    return None


def _public(mod: types.ModuleType) -> list[str]:
    declared = list(getattr(mod, "__all__", None) or ())
    for name in dir(mod):
        obj = getattr(mod, name)
        if name.startswith("_") or name in declared:
            continue
        if isinstance(obj, types.ModuleType):
            if obj.__name__ == f"{mod.__name__}.{name}":
                declared.append(name)
        elif getattr(obj, "__module__", None) == mod.__name__ and (
            mod.__name__ == "torch.cuda" or not hasattr(mod, "__all__")
        ):
            declared.append(name)
    return declared


def classify(names: dict[str, str | None], curated: dict) -> dict[str, dict]:
    """Rule code -> {"names": {...}, "notes": {...}, "fixers": {...}, "fields": {...}}."""
    rules = {
        code: {"names": {}, "notes": {}, "fixers": {}, "fields": {}}
        for code in ("MIG101", "MIG102", "MIG103", "MIG104", "MIG105")
    }
    wheel = npu_wheel()
    skip = tuple(curated["skip"])
    modules = curated["modules_without_npu"]
    for module, note in modules.items():
        for key in (module, f"{module}.*"):
            rules["MIG103"]["names"][key] = None
            rules["MIG103"]["notes"][key] = note
    listed = set(curated["extra_names"]) | set(curated["renamed"]) | set(curated["behaviour"])
    listed |= set(curated["no_equivalent"])
    stale = sorted(q for q in listed - set(names) if not installed_name_exists(q))
    if stale:
        raise SystemExit(f"error: curated names not in this torch: {', '.join(stale)}")
    for qual in sorted(set(names) | listed):
        if qual.startswith(skip) or any(qual.startswith(m + ".") or qual == m for m in modules):
            continue
        code, target, note, fixer = _classify_one(qual, names, curated, wheel)
        rules[code]["names"][qual] = canonical(target, wheel) if target else None
        if note:
            rules[code]["notes"][qual] = note
        if fixer:
            rules[code]["fixers"][qual] = fixer
        fields = (curated["behaviour"].get(qual) or {}).get("fields")
        if fields:
            rules[code]["fields"][qual] = [str(x) for x in fields]
    rules["MIG105"]["names"]["torch.cuda.*"] = None
    return rules


def canonical(target: str, wheel) -> str:
    """Spell targets inside torch.npu submodules as ``torch_npu.npu.<sub>...``.

    ``torch.npu`` is an alias that torch puts in sys.modules; importing a submodule through
    it (``from torch.npu.amp import GradScaler``) loads a second copy of the module file
    under another name, with its own globals. The canonical path avoids that. Attributes
    of torch.npu itself (``torch.npu.synchronize``, ``torch.npu.mstx.mark``) keep the short
    spelling.
    """
    parts = target.split(".")
    if parts[:2] != ["torch", "npu"] or len(parts) < 3:
        return target
    head = wheel.resolve("torch.npu." + parts[2])
    if head is not None and head[0] == "mod":
        return "torch_npu.npu." + ".".join(parts[2:])
    return target


def _classify_one(qual: str, names: dict, curated: dict, wheel):
    tail = qual[len("torch.cuda") :]
    if qual in curated["behaviour"]:
        row = curated["behaviour"][qual]
        return "MIG104", row["target"], _sentence(row["note"]), row.get("fixer")
    if qual in curated["renamed"]:
        return "MIG102", curated["renamed"][qual], None, None
    if qual in curated["no_equivalent"]:
        return "MIG103", None, _sentence(curated["no_equivalent"][qual]), None
    if wheel.exists("torch.npu" + tail):
        return "MIG101", "torch.npu" + tail, None, None
    respelled = "torch.npu" + tail.replace("CUDA", "NPU").replace("Cuda", "Npu")
    if respelled != "torch.npu" + tail and wheel.exists(respelled):
        return "MIG102", respelled, None, None
    leaf = qual.rpartition(".")[2]
    if names.get(qual) == f"torch.cuda.{leaf}" and wheel.exists(f"torch.npu.{leaf}"):
        return "MIG102", f"torch.npu.{leaf}", None, None  # an alias of a top-level name
    print(f"note: {qual} has no counterpart and no curated note", file=sys.stderr)
    return (
        "MIG103",
        None,
        ("torch_npu has no counterpart. Remove the call or find another way to do its job on the NPU."),
        None,
    )


def _sentence(text: str) -> str:
    return " ".join(str(text).split())


def build(curated: dict, names: dict[str, str | None]) -> tuple[list[dict], dict[str, dict]]:
    tables = classify(names, curated)
    bad = [
        (code, key, target)
        for code, table in tables.items()
        for key, target in table["names"].items()
        if target is not None and not target_exists(target)
    ]
    if bad:
        for code, key, target in bad:
            print(
                f"error: {code} {key} -> {target}: target not in torch_npu {VERSION} / torch", file=sys.stderr
            )
        raise SystemExit(1)
    rows = []
    for template in curated["rules"]:
        row = dict(template)
        table = tables[row["code"]]
        params = {"names": dict(sorted(table["names"].items()))}
        if table["notes"]:
            params["notes"] = dict(sorted(table["notes"].items()))
        if table["fixers"]:
            params["fixers"] = dict(sorted(table["fixers"].items()))
        if table["fields"]:
            params["fields"] = dict(sorted(table["fields"].items()))
        if row.get("not_modules"):  # targets that are attributes of a class, not importable
            params["not_modules"] = row.pop("not_modules")
        row["kind"] = "qualified-name"
        row["params"] = params
        rows.append(_ordered(row))
    return rows, tables


def _ordered(row: dict) -> dict:
    order = (
        "code",
        "name",
        "kind",
        "category",
        "impact",
        "effort",
        "message",
        "fix_title",
        "imports",
        "params",
        "portable",
        "transfer",
        "doc",
        "examples",
    )
    return {key: row[key] for key in order if key in row}


def compare_with_data(data: Path, tables: dict[str, dict]) -> None:
    listed = data / "cuda_without_npu.txt"
    if not listed.exists():
        return
    theirs = {
        line.split("\t")[0] for line in listed.read_text().splitlines() if line.startswith("torch.cuda.")
    }
    ours = {key for code in ("MIG103",) for key in tables[code]["names"]}
    mapped = {key for code in ("MIG101", "MIG102", "MIG104") for key in tables[code]["names"]}
    for name in sorted(theirs & mapped):
        print(f"info: {name} is listed without counterpart in {listed.name}, mapped here", file=sys.stderr)
    covered = ours | {k[:-2] for k in ours if k.endswith(".*")}
    for name in sorted(theirs - covered - mapped):
        if not any(name.startswith(k[:-1]) for k in ours if k.endswith(".*")):
            print(f"info: {name} from {listed.name} is not in MIG103", file=sys.stderr)


def render(rows: list[dict], versions: list[str]) -> str:
    header = (
        "# Generated by tools/build_cuda_rules.py from torch "
        f"{', '.join(versions)} and the torch_npu {VERSION} wheel.\n"
        "# Do not edit by hand: change tools/cuda_rules_notes.yaml and rerun the script.\n"
    )
    body = yaml.dump({"rules": rows}, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return header + body


def _torch_version() -> str:
    import torch

    return torch.__version__.split("+")[0]


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=Path("/work/shared/data"),
        help="folder with cuda_without_npu.txt, for a consistency report",
    )
    parser.add_argument("--notes", type=Path, default=NOTES, help="curated input")
    parser.add_argument("--out", type=Path, default=OUT, help="rule file to write")
    parser.add_argument("--check", action="store_true", help="exit 1 if --out is out of date")
    parser.add_argument(
        "--snapshot", action="store_true", help="record the installed torch's torch.cuda names, then build"
    )
    args = parser.parse_args(argv)
    if args.snapshot:
        path = snapshot_path(_torch_version())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(
                {"torch": _torch_version(), "names": snapshot_of(torch_cuda_names())},
                indent=1,
                sort_keys=True,
            )
            + "\n",
            encoding="utf-8",
        )
        print(f"wrote {path.relative_to(REPO)}", file=sys.stderr)
    if args.check and (problem := snapshot_problem()) is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    curated = yaml.safe_load(args.notes.read_text(encoding="utf-8"))
    versions, names = load_snapshots()
    rows, tables = build(curated, names)
    if args.data.exists():
        compare_with_data(args.data, tables)
    text = render(rows, versions)
    for code, table in tables.items():
        print(f"{code}: {len(table['names'])} names", file=sys.stderr)
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(
                f"error: {args.out} is out of date: run `python tools/build_cuda_rules.py`", file=sys.stderr
            )
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
