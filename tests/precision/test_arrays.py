"""arrays.py: dump shards read as numpy arrays without torch give torch's values exactly;
a malformed shard is a UsageError naming it."""

from __future__ import annotations

import copy
import json
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from migrate.core.errors import UsageError
from migrate.precision import arrays
from migrate.precision.metrics.pair import Pair

DTYPES = (
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.float64,
    torch.int64,
    torch.int32,
    torch.int8,
    torch.uint8,
    torch.bool,
    torch.float8_e4m3fn,
    torch.float8_e5m2,
    torch.complex64,
)


def _sample(dtype):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 7, generator=gen) * 300
    x[0, 0, :3] = torch.tensor([float("inf"), float("-inf"), float("nan")])
    if dtype == torch.complex64:
        return torch.complex(x, x.flip(-1))
    if dtype == torch.bool:
        return x > 0
    if not dtype.is_floating_point:
        return torch.nan_to_num(x).to(dtype)
    return x.to(dtype)


def test_every_stored_dtype_reads_as_torch_widens_it(tmp_path):
    tensors = {str(d): _sample(d) for d in DTYPES}
    save_file(tensors, tmp_path / "s.safetensors")
    shard = arrays.Shard(tmp_path / "s.safetensors")
    for name, t in tensors.items():
        data, dtype = shard.raw(name)
        got = arrays.decode(data, dtype, shard.header[name]["shape"])
        want = arrays.from_torch(t)
        assert got.shape == tuple(t.shape) or t.is_complex(), name
        assert zlib.crc32(memoryview(data)) == zlib.crc32(
            t.contiguous().view(torch.uint8).numpy() if t.dtype != torch.bool else t.to(torch.uint8).numpy()
        ), name
        if t.is_complex():
            got = got.view(np.float32).reshape(want.shape)
        np.testing.assert_array_equal(got.astype(want.dtype), want, err_msg=name)


def test_all_float8_bytes_decode_like_torch():
    for dtype, name in ((torch.float8_e4m3fn, "F8_E4M3"), (torch.float8_e5m2, "F8_E5M2")):
        raw = np.arange(256, dtype=np.uint8)
        want = torch.from_numpy(raw.copy()).view(dtype).float().numpy()
        np.testing.assert_array_equal(arrays.decode(raw, name, [256]), want)


def test_pair_gives_the_same_metrics_from_arrays_and_tensors():
    gen = torch.Generator().manual_seed(1)
    ref = torch.randn(64, 33, generator=gen)
    tgt = (ref * 1.001).to(torch.bfloat16)
    th = {"rtol": 0.01, "atol_rms": 0.001}
    a = Pair(ref, tgt, th)
    b = Pair(ref.numpy(), arrays.from_torch(tgt), th, ("float32", "bfloat16"))
    assert (a.norm_ref, a.norm_tgt, a.norm_diff) == (b.norm_ref, b.norm_tgt, b.norm_diff)


def _short(tmp_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(b"\1\2")
    return path


def _shard(tmp_path, header: bytes, body: bytes = b"", length: int | None = None):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", len(header) if length is None else length) + header + body)
    return path


@pytest.mark.parametrize(
    "case",
    ["short", "header_past_end", "not_object", "nested", "range_outside", "shape_mismatch", "bad_dtype"],
)
def test_malformed_shards_are_usage_errors(tmp_path, case):
    entry = {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}
    body = b"\0" * 16
    path = {
        "short": lambda: _short(tmp_path),
        "header_past_end": lambda: _shard(tmp_path, b"{}", length=10**9),
        "not_object": lambda: _shard(tmp_path, b"[1, 2]"),
        "nested": lambda: _shard(tmp_path, b"[" * 100_000 + b"]" * 100_000),
        "range_outside": lambda: _shard(
            tmp_path, json.dumps({"t": {**entry, "data_offsets": [0, 1600]}}).encode(), body
        ),
        "shape_mismatch": lambda: _shard(tmp_path, json.dumps({"t": {**entry, "shape": [5]}}).encode(), body),
        "bad_dtype": lambda: _shard(tmp_path, json.dumps({"t": {**entry, "dtype": "OBJ"}}).encode(), body),
    }[case]()
    with pytest.raises(UsageError, match=str(path.name)):
        arrays.Shard(path).raw("t")


def test_compare_runs_without_importing_torch(tmp_path):
    from migrate.precision.dumper import dump

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Linear(8, 4))
    x = torch.randn(3, 8)
    for name, m in (("ref", model), ("tgt", copy.deepcopy(model).to(torch.bfloat16))):
        with torch.no_grad(), dump(m, tmp_path / name):
            m(x.to(next(m.parameters()).dtype))
    code = (
        "import sys; from migrate.precision.compare import compare_dumps; "
        f"r = compare_dumps({str(tmp_path / 'ref')!r}, {str(tmp_path / 'tgt')!r}); "
        "print(bool(r), len(r.entries), 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    passed, entries, imported = out.stdout.split()
    assert (passed, imported) == ("True", "False") and int(entries) >= 3
