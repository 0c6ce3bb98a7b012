"""The op registry: is (op, opset, dtype) supported on Ascend, and why not.

Data lives in ``op_registry/`` (built by tools/build_op_registry.py):

* ``aten/torch_npu-<version>/native.yaml`` — ATen overloads with an NPU kernel;
  ``sparse.yaml`` — those with a kernel for sparse NPU tensors, per dispatch key;
  ``aten/notes.yaml`` — hand-kept facts (CPU backend kernels, host-side NPU kernels).
* ``onnx/atc/<snapshot>/ops.yaml`` — ATC converter plugins keyed by the model opset;
  ``onnx/ort-cann/<version>/ops.yaml`` — onnxruntime's CANN execution provider.

One call answers a question: ``query("aten", "aten::lgamma")`` or
``query("atc", "Gelu", opset=20, dtype="FLOAT")`` returns a :class:`Verdict`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from migrate.core.errors import UsageError
from migrate.core.resources import op_registry_dir
from migrate.ops.rewrites import checked

SUPPORTED, UNSUPPORTED, CPU_FALLBACK, RESTRICTED = ("supported", "unsupported", "cpu-fallback", "restricted")
DEFAULT_DOMAINS = ("", "ai.onnx")
BACKENDS = ("atc", "ort-cann")


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str = ""

    def __bool__(self) -> bool:
        return self.status == SUPPORTED

    def row(self, op: str, domain: str) -> dict:
        """A coverage report's row for ``op`` judged so (ops --onnx, ops --torch), before its
        first node: the census fills in the count, nodes and dtypes."""
        return {
            "op": op,
            "domain": domain,
            "count": 0,
            "nodes": [],
            "status": self.status,
            "reason": self.reason,
            "decomposition": None,
            "dtypes": [],
        }


def load_yaml(path: Path) -> dict:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader) or {}


def _version_key(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.\-]", name))


def versions(kind: str) -> list[str]:
    """Available versions (folder names) of ``aten``, ``onnx/atc`` or ``onnx/ort-cann``."""
    folder = op_registry_dir() / kind
    found = [p.name for p in folder.iterdir() if p.is_dir()] if folder.is_dir() else []
    return sorted(found, key=_version_key)


def _pick(kind: str, prefix: str, target: str | None) -> str:
    found = versions(kind)
    if not found:
        raise UsageError(f"no op registry data under op_registry/{kind}")
    if not target:
        return found[-1]
    want = target.split("==", 1)[-1].strip()
    for name in found:
        if name in (want, f"{prefix}{want}"):
            return name
    raise UsageError(f"unknown --target {target!r}; known: {', '.join(found)}")


def aten_name(overload: str) -> str:
    """'aten::add.Tensor' / 'add.Tensor' / 'aten::gelu' -> registry key 'add.Tensor' / 'gelu'."""
    name = overload.split("::", 1)[-1]
    return name[: -len(".default")] if name.endswith(".default") else name


class AtenRegistry:
    def __init__(self, version: str):
        self.version = version
        base = op_registry_dir() / "aten"
        data = load_yaml(base / version / "native.yaml")
        self.overloads: dict[str, dict] = data.get("overloads") or {}
        self.custom: dict[str, dict] = load_yaml(base / version / "custom.yaml").get("ops") or {}
        notes = load_yaml(base / "notes.yaml")
        self.cpu_backend: dict[str, dict] = notes.get("cpu_backend_kernels") or {}
        self.on_host: dict[str, str] = notes.get("npu_kernel_on_host") or {}
        self.weak_dtypes: dict[str, str] = notes.get("weak_dtypes") or {}
        self.python_forwards: dict[str, str] = notes.get("python_forwards") or {}
        self.host_sync: dict[str, str] = notes.get("host_sync") or {}
        self.bool_mask_index: dict = notes.get("bool_mask_index") or {}
        self.host_sync_calls: dict[str, str] = notes.get("host_sync_calls") or {}
        self.regular_paths: dict[str, dict] = notes.get("regular_tensor_paths") or {}
        rewrites = base / "rewrites.yaml"
        self.rewrites: dict[str, dict] = checked(load_yaml(rewrites)) if rewrites.is_file() else {}
        self.requires_torch: str | None = (data.get("source") or {}).get("requires_torch")
        sparse = base / version / "sparse.yaml"
        keys = (load_yaml(sparse).get("keys") or {}) if sparse.is_file() else {}
        # torch_npu's sparse key (SparseNPU, SparseCsrNPU) -> the overloads with a kernel there
        self.sparse: dict[str, frozenset[str]] = {
            key: frozenset(row.get("overloads") or ()) for key, row in keys.items()
        }

    def has_kernel(self, overload: str) -> bool:
        name = aten_name(overload)
        if overload.startswith("npu::"):
            return name in self.custom
        if "::" in overload and not overload.startswith("aten::"):
            return False  # another library's op: torch_npu registers none
        return name in self.overloads

    def has_sparse_kernel(self, overload: str, key: str) -> bool:
        """Does torch_npu register a kernel for ``overload`` at its sparse ``key`` (SparseNPU,
        SparseCsrNPU)? Other libraries' ops: never."""
        if "::" in overload and not overload.startswith("aten::"):
            return False
        return aten_name(overload) in self.sparse.get(key, ())

    def lookup(self, overload: str, dtype: str | None = None) -> Verdict:
        """Direct lookup only: composite resolution is the capture's job (ops/aten/)."""
        name = aten_name(overload)
        pkg = f"torch_npu {self.version.split('-', 1)[-1]}"
        if not self.has_kernel(overload):
            return Verdict(
                CPU_FALLBACK,
                f"no NPU kernel in {pkg}: runs on the CPU through "
                "torch_npu's fallback (an error with "
                "TORCH_NPU_FALLBACK_CPU_DISABLE=1)",
            )
        notes = []
        base = name.split(".", 1)[0]
        if base in self.on_host:
            notes.append(f"NPU kernel computes on the host: {self.on_host[base]}")
        if dtype and dtype in self.weak_dtypes:
            notes.append(self.weak_dtypes[dtype])
        sections = ",".join((self.overloads.get(name) or {}).get("sections") or ["custom"])
        return Verdict(SUPPORTED, "; ".join(notes) or f"NPU kernel in {pkg} ({sections})")


@cache
def load_aten(target: str | None = None) -> AtenRegistry:
    return AtenRegistry(_pick("aten", "torch_npu-", target))


_DTYPE_ALIASES = {"BFLOAT16": "BF16", "DOUBLE": "DOUBLE", "FLOAT": "FLOAT", "BOOL": "BOOL"}


class OnnxRegistry:
    """ATC (default) or onnxruntime-CANN coverage of ONNX ops, by model opset."""

    def __init__(self, backend: str, version: str):
        self.backend, self.version = backend, version
        base = op_registry_dir() / "onnx" / backend / version
        data = load_yaml(base / "ops.yaml")
        if backend == "atc":
            self.ops: dict[str, dict] = data.get("ops") or {}
            self.builtin: dict[str, dict] = data.get("parser_builtin") or {}
            self.max_opset: int = int(data.get("max_opset") or 18)
            cons = base / "constraints.yaml"
            self.constraints: dict = (load_yaml(cons).get("ops") or {}) if cons.exists() else {}
            self.corrections = _corrections(base.parent / "corrections.yaml", self.ops)
        else:
            self.corrections = {}
            self.graph = data.get("graph_mode") or {}
            self.single = data.get("single_op") or []
            self.max_opset = int(self.graph.get("opsets", [8, 15])[1])
            self.constraints = {}

    def lookup(
        self, op: str, domain: str, opset: int, dtype: str | None = None, soc: str | None = None
    ) -> Verdict:
        if self.backend == "atc":
            return self._atc(op, domain or "ai.onnx", opset, dtype, soc)
        return self._ort(op, domain or "ai.onnx", opset)

    def socs(self) -> list[str]:
        """Chips named by the per-kernel dtype data (``--soc`` choices)."""
        found: set[str] = set()
        for row in self.ops.values() if self.backend == "atc" else ():
            for info in (row.get("ge_op_dtypes") or {}).values():
                found.update(info.get("socs") or [])
        return sorted(found)

    def check_soc(self, soc: str) -> None:
        known = self.socs()
        if soc not in known:
            raise UsageError(f"unknown --soc {soc!r}; the data has per-chip dtypes for {', '.join(known)}")

    def _atc(self, op: str, domain: str, opset: int, dtype: str | None, soc: str | None = None) -> Verdict:
        key = op if domain == "ai.onnx" else f"{domain}::{op}"
        if domain == "ai.onnx" and op in self.builtin:
            return Verdict(SUPPORTED, self.builtin[op].get("why", ""))
        row = self.ops.get(key)
        if row is None:
            where = "" if domain == "ai.onnx" else f" for custom domain '{domain}'"
            return Verdict(UNSUPPORTED, f"no ATC converter plugin for {op}{where}")
        fix = self.corrections.get(key) or {}
        doc = f" (source: {fix['source']})" if fix else ""
        if opset not in row["opsets"] and opset in (fix.get("opsets") or ()):
            return Verdict(SUPPORTED, f"ATC documents {op} for opset {opset}{doc}")
        if opset not in row["opsets"]:
            reason = (
                f"ATC registers {op} for model opsets {_ranges(row['opsets'])} only "
                f"(keyed exactly); this model declares opset {opset}"
            )
            if opset > self.max_opset:
                reason += f"; re-export with opset_version={self.max_opset}"
            return Verdict(UNSUPPORTED, reason)
        allowed = set(fix["input_dtypes"]) if fix.get("input_dtypes") else _input_dtypes(row, soc)
        if fix.get("input_dtypes") and dtype and dtype in allowed:
            return Verdict(
                SUPPORTED,
                f"ATC plugin -> {'/'.join(row.get('ge_op') or [op])}; "
                f"{dtype} is a documented input type{doc}",
            )
        if dtype and allowed and _DTYPE_ALIASES.get(dtype, dtype) not in allowed:
            chip = f" on {soc}" if soc else ""
            return Verdict(
                RESTRICTED,
                f"Ascend op {'/'.join(row.get('ge_op') or [op])} takes "
                f"{','.join(sorted(allowed))}{chip}, not {dtype} (AI "
                "Core kernel definition; may fail or run on AI CPU; "
                f"source: {(row.get('source') or ['ops.yaml'])[0]})",
            )
        return Verdict(SUPPORTED, f"ATC plugin -> {'/'.join(row.get('ge_op') or [op])}")

    def _ort(self, op: str, domain: str, opset: int) -> Verdict:
        lo, hi = self.graph.get("opsets", [8, 15])
        if domain == "ai.onnx" and lo <= opset <= hi and op in self.graph.get("ops", ()):
            return Verdict(SUPPORTED, "CANN EP graph mode")
        if domain == "ai.onnx":
            since = _since_version(op, opset)
            for row in self.single:
                if (
                    row["op"] == op
                    and since is not None
                    and row["since"] <= since
                    and (row["until"] is None or since <= row["until"])
                ):
                    return Verdict(SUPPORTED, f"CANN EP single-op kernel ({op}-{row['since']})")
        why = (
            f"graph mode needs model opset {lo}-{hi}"
            if not lo <= opset <= hi
            else "not in the CANN EP's list"
        )
        return Verdict(CPU_FALLBACK, f"{why}; onnxruntime runs the node on its CPU provider")


_CORRECTION_FIELDS = {"input_dtypes", "opsets", "why", "source"}


def _corrections(path: Path, ops: dict) -> dict[str, dict]:
    """Doc corrections (op_registry/onnx/atc/corrections.yaml), checked against ops.yaml."""
    if not path.is_file():
        return {}
    rows = load_yaml(path).get("ops") or {}
    for op, row in rows.items():
        bad = set(row) - _CORRECTION_FIELDS
        if (
            op not in ops
            or bad
            or not row.get("source")
            or not row.get("why")
            or not (row.get("input_dtypes") or row.get("opsets"))
        ):
            raise ValueError(
                f"{path}: {op}: unknown op, unknown fields {sorted(bad)}, or a row "
                "without why, source and input_dtypes/opsets"
            )
    return rows


def _ranges(opsets: list[int]) -> str:
    out, start = [], None
    for i, v in enumerate(opsets):
        start = v if start is None else start
        if i + 1 == len(opsets) or opsets[i + 1] != v + 1:
            out.append(str(start) if start == v else f"{start}-{v}")
            start = None
    return ",".join(out)


def _input_dtypes(row: dict, soc: str | None = None) -> set[str]:
    """Input-0 dtypes of the row's Ascend kernels (those defined for ``soc`` when given)."""
    found: set[str] = set()
    for info in (row.get("ge_op_dtypes") or {}).values():
        if soc and soc not in (info.get("socs") or []):
            continue
        for line in info.get("io") or []:
            if line.startswith("input "):
                found.update(line.split(":", 1)[1].strip().split(","))
                break
    return found


def _since_version(op: str, opset: int) -> int | None:
    try:
        import onnx.defs

        return onnx.defs.get_schema(op, opset).since_version
    except Exception:  # noqa: BLE001 - unknown op or onnx missing
        return None


@cache
def load_onnx(backend: str = "atc", target: str | None = None) -> OnnxRegistry:
    if backend not in BACKENDS:
        raise UsageError(f"unknown --backend {backend!r}; choose atc or ort-cann")
    prefix = "cann-" if backend == "atc" else ""
    if target and target.startswith("torch_npu"):
        target = None  # a torch_npu pin selects ATen data; ONNX uses its newest snapshot
    return OnnxRegistry(backend, _pick(f"onnx/{backend}", prefix, target))


def query(
    source: str,
    op: str,
    opset: int | None = None,
    dtype: str | None = None,
    domain: str = "ai.onnx",
    target: str | None = None,
) -> Verdict:
    """The one question: ``source`` is 'aten', 'atc' or 'ort-cann'."""
    if source == "aten":
        return load_aten(target).lookup(op, dtype)
    return load_onnx(source, target).lookup(op, domain, opset or 18, dtype)
