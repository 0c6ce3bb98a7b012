"""Sparse tensors: the kernels torch_npu's binary registers per sparse dispatch key
(tools/npu_binary.py, op_registry/aten/torch_npu-*/sparse.yaml) and the verdicts of
``migrate ops --torch`` for ops called on sparse COO / CSR tensors (a GCN layer)."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest
import yaml

torch = pytest.importorskip("torch")
import npu_binary  # noqa: E402 - tools/ (tests/conftest.py puts it on the path)

from migrate.ops import registry  # noqa: E402
from migrate.ops.aten.census import aten_census  # noqa: E402
from migrate.ops.aten.judge import Judge  # noqa: E402

SPECS = Path(__file__).with_name("specs.py")
REPO = Path(__file__).resolve().parents[2]


def _functor(wrapper: str) -> bytes:
    """The RTTI type name of the c10 functor ``m.impl(..., TORCH_FN(wrapper))`` makes."""
    return (
        b"N3c104impl6detail24WrapFunctionIntoFunctor_INS_26CompileTimeFunctionPointerIFN2at6Tensor"
        b"ERKS5_EXadL_ZNS4_9sparsenpu12_GLOBAL__N_1"
        + str(len(wrapper)).encode()
        + wrapper.encode()
        + b"ES7_EEEES5_NS_4guts8typelist8typelistIJS7_EEEEE\0"
    )


def _elf(sections: dict[str, bytes]) -> bytes:
    """A minimal little-endian ELF64 image: a null section, ``sections``, .shstrtab."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n in [*sections, ".shstrtab"])
    blobs = [*sections.values(), names]
    body, offsets, pos = b"", [], 64
    for blob in blobs:
        offsets.append(pos)
        body += blob
        pos += len(blob)
    headers = [b"\0" * 64]
    name_at = 1
    for (name, blob), offset in zip([*sections.items(), (".shstrtab", names)], offsets, strict=True):
        headers.append(struct.pack("<IIQQQQIIQQ", name_at, 1, 0, 0, offset, len(blob), 0, 0, 1, 0))
        name_at += len(name) + 1
    head = bytearray(64)
    head[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", head, 0x28, pos)
    struct.pack_into("<HHH", head, 0x3A, 64, len(headers), len(headers) - 1)
    return bytes(head) + body + b"".join(headers)


IMAGE = _elf(
    {
        ".text": _functor("wrap_SparseNPU_sin_"),  # not read-only data: not a type name
        ".rodata": b"".join(
            _functor(w)
            for w in (
                "wrap_SparseNPU_mm_",
                "wrap_SparseNPU_abs__",
                "wrap_SparseNPU_sum_dim_IntList",
                "wrapper_SparseNPU_out_add_out",
                "wrapper_SparseNPU___coalesce",
                "wrap_SparseNPU_frobnicate_",
            )
        ),
        ".rodata.str1.8": _functor("wrap_SparseCsrNPU_addmm_"),
    }
)


def test_the_binary_reader_maps_functor_type_names_to_overloads():
    got = npu_binary.sparse_kernels(IMAGE)
    coo, csr = got["SparseNPU"], got["SparseCsrNPU"]
    assert coo["overloads"] == ["_coalesce", "abs_", "add.out", "mm", "sum.dim_IntList"]
    assert coo["unresolved"] == ["wrap_SparseNPU_frobnicate_"] and coo["wrappers"] == 6
    assert coo["dispatch_key"] == "SparsePrivateUse1" and coo["layouts"] == ["sparse_coo"]
    assert csr["overloads"] == ["addmm"] and csr["dispatch_key"] == "SparseCsrPrivateUse1"
    with pytest.raises(ValueError, match="ELF64"):
        npu_binary.rodata(b"MZ" + IMAGE[2:])


def test_builder_writes_the_sparse_kernels_of_a_wheel(tmp_path, monkeypatch, op_builder):
    tool, out = op_builder
    wheel = tmp_path / "torch_npu-9.0.0-cp311-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("torch_npu/version.py", "__version__ = '9.0.0'\n")
        zf.writestr("torch_npu/csrc/aten/npu_native_functions.yaml", "supported: [mm]\n")
        zf.writestr("torch_npu/npu/__init__.py", "__all__ = []\n")
        zf.writestr("torch_npu/__init__.py", "__all__ = []\n")
        zf.writestr("torch_npu/lib/libtorch_npu.so", IMAGE)
    assert tool.main(["--wheel", str(wheel)]) == 0
    monkeypatch.setattr(registry, "op_registry_dir", lambda: out)
    reg = registry.AtenRegistry("torch_npu-9.0.0")
    assert reg.has_sparse_kernel("aten::mm", "SparseNPU")
    assert reg.has_sparse_kernel("aten::sum.dim_IntList", "SparseNPU")
    assert not reg.has_sparse_kernel("aten::addmm", "SparseNPU")
    assert reg.has_sparse_kernel("aten::addmm", "SparseCsrNPU")


def test_committed_sparse_kernels_are_those_of_the_wheel():
    from npu_wheel import wheel_path

    with zipfile.ZipFile(wheel_path("2.14.0")) as zf:
        got = npu_binary.sparse_kernels(zf.read("torch_npu/lib/libtorch_npu.so"))
    data = yaml.safe_load((REPO / "op_registry/aten/torch_npu-2.14.0/sparse.yaml").read_text())
    assert data["keys"] == got
    assert got["SparseNPU"]["count"] == 160 and got["SparseCsrNPU"]["count"] == 128
    assert {"mm", "_to_dense", "values", "is_coalesced", "mul.Tensor"} <= set(got["SparseNPU"]["overloads"])


def _sparse_rows(report) -> dict:
    return {(r["op"], r["sparse_key"]): r for r in report["ops"] if "sparse_key" in r}


def test_gcn_verdicts_on_sparse_coo_follow_the_wheel():
    """torch.mm and to_dense on a COO matrix have SparseNPU kernels; torch.sparse.mm runs
    torch's _sparse_addmm, which calls addmm, and torch_npu has no SparseNPU addmm."""
    reg = registry.load_aten()
    report = aten_census(f"{SPECS}:gcn", train=True)
    rows = _sparse_rows(report)
    assert rows[("aten::mm", "SparseNPU")]["status"] == "supported"
    assert rows[("aten::_to_dense", "SparseNPU")]["reason"].startswith("SparseNPU kernel in torch_npu")
    bad = rows[("aten::_sparse_addmm", "SparseNPU")]
    assert bad["status"] == "unsupported" and not reg.has_sparse_kernel("aten::addmm", "SparseNPU")
    assert "no SparseNPU kernel for aten::addmm" in bad["reason"] and "to_dense()" in bad["reason"]
    assert bad["locations"] and bad["locations"][0].startswith("tests/ops/specs.py:")
    for (op, key), row in rows.items():  # a kernel verdict is one the binary has
        if row["reason"].startswith(f"{key} kernel"):
            assert reg.has_sparse_kernel(op, key), op
    assert report["summary"]["unsupported"] == 1 and report["errors"] == []


def test_gcn_on_csr_is_supported_by_the_csr_kernels():
    report = aten_census(f"{SPECS}:gcn_csr", train=True)
    rows = _sparse_rows(report)
    assert set(rows) >= {("aten::mm", "SparseCsrNPU"), ("aten::_sparse_addmm", "SparseCsrNPU")}
    assert "aten::addmm" in rows[("aten::_sparse_addmm", "SparseCsrNPU")]["reason"]
    assert report["summary"]["unsupported"] == 0


@pytest.mark.parametrize(
    ("op", "status"),
    [("aten::sin", "supported"), ("aten::lgamma", "unsupported"), ("aten::addmm", "unsupported")],
)
def test_ops_on_coo_tensors_are_judged_at_the_sparse_key(op, status):
    judge = Judge(None)
    adj = torch.eye(3).to_sparse()
    assert judge.sparse_key([adj, torch.ones(3)]) == "SparseNPU"
    assert judge.sparse_key([adj, adj.to_sparse_csr()]) == "SparseCsrNPU"
    assert judge.sparse_key([torch.ones(3)]) is None
    verdict = judge.sparse(op, "SparseNPU")
    assert verdict is not None and verdict.status == status, verdict
    if status == "unsupported":
        assert "SparsePrivateUse1" in verdict.reason and "CPU fallback serves dense" in verdict.reason
