"""Runs inside ``migrate run --emulate npu`` (test_run.py starts it once): the device
surface, the hf_flash_attention sample (original on the CPU vs its port on the emulated
NPU), the attention fixers' helpers against SDPA, and dumps for ``migrate compare``.

python emulated_checks.py OUT_DIR  -> OUT_DIR/results.json, OUT_DIR/dumps/{ref,good,bad}
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

import torch
import torch.nn.functional as F
import torch_npu

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(sys.argv[1])
TARGETS = ("npu", "portable")  # the ports of the library samples checked here
results: dict = {}


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def load_package(name: str, init: Path):
    """The package whose ``__init__.py`` is ``init``, imported under its own ``name`` (its
    modules import each other by it), after any other copy of that package is dropped."""
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(init.parent)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def surface() -> None:
    x = torch.ones(2, 3).npu()
    results["device"] = [
        str(x.device),
        x.is_npu,
        x.device.type == "npu",
        str(torch.accelerator.current_accelerator()),
        torch.npu.device_count(),
        torch_npu.npu.is_available(),
    ]
    with torch.npu.device(1):
        results["device_ctx"] = [torch.npu.current_device(), str(torch.zeros(1, device="npu").device)]
    s, e1, e2 = torch.npu.Stream(), torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    with torch.npu.stream(s):
        e1.record()
        y = (x * 2).sum()
        e2.record()
    results["stream"] = [e1.elapsed_time(e2) >= 0, float(y)]
    results["memory"] = torch.npu.memory_allocated() > 0 and torch.npu.max_memory_allocated() > 0
    try:
        x + torch.ones(2, 3)
        results["mismatch"] = None
    except RuntimeError as exc:
        results["mismatch"] = str(exc)
    try:
        torch_npu.npu_ciou(x, x)
    except NotImplementedError as exc:
        results["not_emulated"] = str(exc)
    from torch_npu.contrib import transfer_to_npu  # noqa: F401 - importable

    results["amp"] = str(torch_npu.npu.amp.GradScaler(enabled=True).scale(x.sum()).device)
    lin = torch.nn.Linear(3, 3).npu()
    with torch_npu.npu.amp.autocast():
        h = lin(x)
        dtypes = [h.dtype, torch.softmax(h, -1).dtype, (h + 1).dtype]
    with torch.autocast("npu", dtype=torch.bfloat16):
        dtypes.append(lin(x).dtype)
    dtypes.append(lin(x).dtype)
    results["autocast"] = [str(d).removeprefix("torch.") for d in dtypes]
    with torch_npu.profiler.profile() as prof:
        prof.step()
    results["profiler_steps"] = prof.steps
    wide = torch.ones(3, device="npu", dtype=torch.float64)  # reported: dtype
    torch.special.zeta(wide, wide)  # reported: no NPU kernel
    torch.save({"w": x}, OUT / "ckpt.pt")
    results["load"] = str(torch.load(OUT / "ckpt.pt", map_location="npu:0")["w"].device)


def hf_sample() -> None:
    apex = types.ModuleType("apex")
    apex.normalization = types.ModuleType("apex.normalization")

    class FusedRMSNorm(torch.nn.RMSNorm):  # apex's signature and formula
        def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, memory_efficient=False):
            super().__init__(normalized_shape, eps=eps, elementwise_affine=elementwise_affine)

    apex.normalization.FusedRMSNorm = FusedRMSNorm
    sys.modules.update(
        {"apex": apex, "apex.normalization": apex.normalization, "flash_attn": None}
    )  # no flash_attn: the original runs SDPA
    runs = [
        ("original", load("lite_orig", ROOT / "samples/hf_flash_attention/modeling_llama_lite.py"), "cpu")
    ]
    for target in TARGETS:
        path = ROOT / f"samples/_expected/{target}/hf_flash_attention/modeling_llama_lite.py"
        runs.append((target, load(f"lite_{target}", path), "npu"))
    losses = {}
    for name, mod, dev in runs:
        cfg = mod.LiteConfig(
            hidden_size=64, num_attention_heads=4, num_key_value_heads=4, intermediate_size=128
        )
        torch.manual_seed(0)
        layer = mod.LiteDecoderLayer(cfg).to(dev)
        x = torch.randn(2, 16, 64).to(dev)
        pos = torch.arange(16).to(dev)
        opt = torch.optim.SGD(layer.parameters(), lr=0.1)
        first = layer(x, pos).pow(2).mean()
        first.backward()
        opt.step()
        second = layer(x, pos).pow(2).mean()
        losses[name] = [float(first), float(second)]
        losses[name + "_flash"] = bool(layer.self_attn.use_flash)
    results["hf_sample"] = losses


def cuda_extension_sample() -> None:
    """The extension is not built (no CUDA compiler, and its .cu needs an Ascend C port):
    both the original and the port take the PyTorch path; one training step each."""
    original = ROOT / "samples/cuda_extension/fused_ops/__init__.py"
    runs = [("original", load_package("fused_ops", original), "cpu")]
    for target in TARGETS:
        path = ROOT / f"samples/_expected/{target}/cuda_extension/fused_ops/__init__.py"
        runs.append((target, load_package("fused_ops", path), "npu"))
    losses = {}
    for name, mod, dev in runs:
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(16, 16), mod.BiasGeLU(16)).to(dev)
        x = torch.randn(8, 16).to(dev)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        first = net(x).pow(2).mean()
        first.backward()
        opt.step()
        losses[name] = [float(first), float(net(x).pow(2).mean())]
    results["cuda_extension"] = losses


def fixers() -> None:
    from migrate.scan.python.fixers import flash_attention, xformers_attention

    ns = {"torch": torch, "torch_npu": torch_npu}
    for code in (flash_attention.FUNC_HELPER, flash_attention.VARLEN_HELPER, xformers_attention.HELPER):
        exec(code, ns)  # the helper text migrate apply writes into ported files
    g = torch.Generator().manual_seed(5)
    errs = {}
    for sq, skv in ((8, 8), (5, 9)):
        q = torch.randn(2, sq, 4, 16, generator=g)
        k, v = torch.randn(2, skv, 4, 16, generator=g), torch.randn(2, skv, 4, 16, generator=g)
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
        i, j = torch.arange(sq)[:, None], torch.arange(skv)[None, :]
        bottom_right = ~(j > i + (skv - sq))  # flash_attn >= 2.1 causal
        top_left = ~(j > i)  # xformers LowerTriangularMask
        cases = {
            "flash": (
                ns["npu_flash_attn_func"](q.npu(), k.npu(), v.npu(), softmax_scale=0.2),
                F.scaled_dot_product_attention(qt, kt, vt, scale=0.2),
            ),
            "flash_causal": (
                ns["npu_flash_attn_func"](q.npu(), k.npu(), v.npu(), causal=True),
                F.scaled_dot_product_attention(qt, kt, vt, attn_mask=bottom_right),
            ),
            "xformers_causal": (
                ns["npu_memory_efficient_attention"](q.npu(), k.npu(), v.npu(), causal=True),
                F.scaled_dot_product_attention(qt, kt, vt, attn_mask=top_left),
            ),
        }
        for name, (got, ref) in cases.items():
            errs[f"{name}_{sq}x{skv}"] = float((got.cpu() - ref.transpose(1, 2)).abs().max())
    lens = [3, 6, 4]
    q, k, v = (torch.randn(sum(lens), 4, 16, generator=g) for _ in range(3))
    cu = torch.tensor([0, 3, 9, 13], dtype=torch.int32)
    got = ns["npu_flash_attn_varlen_func"](q.npu(), k.npu(), v.npu(), cu.npu(), cu.npu(), causal=True).cpu()
    refs = [
        F.scaled_dot_product_attention(
            *(t[a:b].transpose(0, 1) for t in (q, k, v)), is_causal=True
        ).transpose(0, 1)
        for a, b in zip(cu[:-1].tolist(), cu[1:].tolist())
    ]
    errs["flash_varlen_causal"] = float((got - torch.cat(refs)).abs().max())
    results["fixers"] = errs


class Attn(torch.nn.Module):
    def __init__(self, impl):
        super().__init__()
        self.proj = torch.nn.Linear(32, 32)
        self.impl = impl

    def forward(self, x):
        b, s, _ = x.shape
        q = self.proj(x).view(b, s, 4, 8)
        return self.impl(q, q, q).reshape(b, s, 32)


def dumps() -> None:
    from migrate.precision.dumper import dump

    def ref(q, k, v):
        return F.scaled_dot_product_attention(
            *(t.transpose(1, 2) for t in (q, k, v)), is_causal=True
        ).transpose(1, 2)

    def good(q, k, v):
        return torch_npu.npu_fusion_attention(
            q,
            k,
            v,
            4,
            "BSND",
            atten_mask=torch.triu(torch.ones(2048, 2048, device=q.device), 1).bool(),
            scale=8**-0.5,
            sparse_mode=3,
        )[0]

    def bad(q, k, v):  # a wrong port: the default scale (1.0) instead of head_dim ** -0.5
        return torch_npu.npu_fusion_attention(q, k, v, 4, "BSND")[0]

    x = torch.randn(2, 12, 32, generator=torch.Generator().manual_seed(7))
    for name, impl, dev in (("ref", ref, "cpu"), ("good", good, "npu"), ("bad", bad, "npu")):
        torch.manual_seed(0)
        model = Attn(impl).to(dev)
        with dump(model, OUT / "dumps" / name):
            model(x.to(dev))


def names() -> None:
    """Every public name of the wheel's surface, and every torch_npu name the rules and
    fixers write, resolves under the emulation."""
    import importlib
    import re

    from migrate.emulate.data import surface as wheel_surface

    missing = [
        f"{m}.{n}"
        for m, ns in wheel_surface().modules.items()
        for n in ns
        if not hasattr(importlib.import_module(m), n)
    ]
    written = set()
    for path in [*ROOT.glob("rules/*.yaml"), *ROOT.glob("migrate/scan/python/fixers/*.py")]:
        written |= set(re.findall(r"\btorch_npu(?:\.[A-Za-z_][A-Za-z0-9_]*)+", path.read_text()))
    unresolved = []
    for name in sorted(written):
        parts = name.split(".")
        obj = importlib.import_module("torch_npu")
        for part in parts[1:]:
            if part == "so" or not hasattr(obj, part):  # "torch_npu.so" is a file name
                unresolved.append(name) if part != "so" else None
                break
            obj = getattr(obj, part)
    results["names"] = {
        "surface": sum(len(v) for v in wheel_surface().modules.values()),
        "missing": missing,
        "written": len(written),
        "unresolved": unresolved,
    }


surface()
names()
hf_sample()
cuda_extension_sample()
fixers()
dumps()
(OUT / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
