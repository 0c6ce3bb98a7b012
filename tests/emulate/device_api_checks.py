"""Runs inside ``migrate run --emulate npu`` (test_device_api.py starts it once): what a
portable port calls (torch.accelerator, torch.get_device_module, torch.amp), what models use
(RNNs, list indexing, save/load, memory formats), and what the report must say about them.

python device_api_checks.py OUT_DIR  -> OUT_DIR/results.json
"""

from __future__ import annotations

import copy
import io
import json
import sys
from pathlib import Path

import parity_model
import torch

OUT = Path(sys.argv[1])
results: dict = {}


def attempt(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - the message is the result
        return f"{type(exc).__name__}: {exc}"


def accelerator() -> None:
    acc = torch.accelerator
    side = torch.npu.Stream()
    acc.current_stream().wait_stream(side)
    acc.synchronize()
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record()
    with side:
        inside = acc.current_stream() is side
    end.record(side)
    end.synchronize()
    acc.set_device_index(3)
    index = [acc.current_device_index(), torch.npu.current_device()]
    with acc.device_index(1):
        index.append(torch.npu.current_device())
    index.append(acc.current_device_index())
    acc.set_device_index(0)
    acc.reset_peak_memory_stats()
    acc.empty_cache()
    gen = torch.Generator(device="npu").manual_seed(7)
    drawn = torch.randn(3, device="npu", generator=gen)
    results["accelerator"] = {
        "accelerator": str(acc.current_accelerator()),
        "count": acc.device_count(),
        "module": torch.get_device_module().__name__,
        "module_npu": torch.get_device_module("npu:0") is torch.npu,
        "streams": [
            isinstance(side, torch.Stream),
            isinstance(start, torch.Event),
            inside,
            start.elapsed_time(end) >= 0,
        ],
        "index": index,
        "memory": [
            acc.memory_allocated() > 0,
            acc.max_memory_allocated() > 0,
            acc.memory_reserved() > 0,
            acc.memory_stats()["allocated_bytes.all.current"] > 0,
            acc.get_memory_info()[1] > 0,
        ],
        "generator": [
            str(gen.device),
            str(drawn.device),
            isinstance(gen, torch.Generator),
            torch.equal(drawn.cpu(), torch.randn(3, generator=torch.Generator().manual_seed(7))),
        ],
        "autocast": str(_autocast_dtype()),
        "not_emulated": attempt(acc.get_device_capability),
    }


def _autocast_dtype():
    lin = torch.nn.Linear(4, 4).to("npu")
    with torch.amp.autocast("npu", dtype=torch.bfloat16):
        return lin(torch.ones(2, 4, device="npu")).dtype


def models() -> None:
    x = torch.arange(6.0, device="npu").reshape(3, 2)
    y = x.clone()
    y[[0, 2]] = -1.0
    index = [
        x[[2, 0]].tolist(),
        x[[2, 0], [1, 0]].tolist(),
        x[[True, False, True]].tolist(),
        list(x[[]].shape),
        y.tolist(),
    ]
    # pytorch/examples mnist_forward_forward: x_[range(x.shape[0]), y] = x.max()
    labels = torch.tensor([1, 0, 1])
    sequences = {}
    for dev in ("cpu", "npu"):
        z = torch.arange(6.0).reshape(3, 2).to(dev)
        z[range(3), labels.to(dev)] = z.max()
        z[(0, 2), (1, 1)] = -z[range(2)].sum()
        sequences[dev] = [z.tolist(), z[range(1, 3), [0, 1]].tolist(), z[:, range(1)].tolist()]
    index.append(sequences["npu"] == sequences["cpu"])
    rnn = {}
    for cls in (torch.nn.LSTM, torch.nn.GRU):
        torch.manual_seed(0)
        cpu = cls(4, 5, num_layers=2)
        npu = copy.deepcopy(cpu).to("npu")
        inp = torch.randn(3, 2, 4)
        grads = []
        for model, dev in ((cpu, "cpu"), (npu, "npu")):
            out, _ = model(inp.to(dev))
            out.pow(2).sum().backward()
            grads.append([p.grad.cpu() for p in model.parameters()])
        rnn[cls.__name__] = max(float((a - b).abs().max()) for a, b in zip(*grads))
    conv = torch.nn.Conv2d(3, 4, 3).to("npu").to(memory_format=torch.channels_last)
    half = torch.nn.Linear(2, 2).to("npu").half()
    formats = [
        conv.weight.is_contiguous(memory_format=torch.channels_last),
        str(half.weight.dtype),
        str(half(torch.ones(1, 2, device="npu").half()).dtype),
    ]
    results["models"] = {"index": index, "rnn": rnn, "formats": formats}


def save_load() -> None:
    lin = torch.nn.Linear(2, 2).to("npu")
    buf = io.BytesIO()
    torch.save({"sd": lin.state_dict(), "model": lin, "step": torch.tensor(3)}, buf)
    (OUT / "npu_checkpoint.pt").write_bytes(buf.getvalue())
    found = {}
    for name, where in (
        ("default", None),
        ("cpu", "cpu"),
        ("dict", {"npu:0": "cpu"}),
        ("function", lambda storage, loc: storage),
        ("npu", "npu"),
    ):
        buf.seek(0)
        got = torch.load(buf, map_location=where, weights_only=False)
        found[name] = [
            str(got["sd"]["weight"].device),
            str(got["model"].weight.device),
            isinstance(got["model"].weight, torch.nn.Parameter),
            str(got["step"].device),
        ]
    cpu_buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, cpu_buf)
    cpu_buf.seek(0)
    found["cpu_file_to_npu"] = str(torch.load(cpu_buf, map_location="npu")["w"].device)
    results["save_load"] = found


def reports() -> None:
    x = torch.arange(6.0, device="npu")
    x.tolist()  # host sync: tolist
    x[x > 2]  # host sync: boolean mask
    torch.where(x > 2)  # host sync: one-argument where
    torch.where(x > 2, x, 0.0)  # not a host sync
    torch.randn(1, 3, 4, 4, device="npu").to(memory_format=torch.channels_last).is_contiguous(
        memory_format=torch.channels_last
    )  # metadata query: not a fallback
    model, args = parity_model.build()
    model = model.to("npu")
    loss = model(*(a.to("npu") for a in args)).float().mean()
    loss.backward()
    torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False).step()


def scripted() -> None:
    """TorchScript still compiles torch.tensor / torch.as_tensor as builtins: torch 2.13's
    torch.distributed.optim scripts its functional optimizers at import (karpathy/llm.c
    train_gpt2.py imports ZeroRedundancyOptimizer)."""

    def imported():
        from torch.distributed.optim import ZeroRedundancyOptimizer

        return ZeroRedundancyOptimizer.__name__

    def script():
        def f(x: torch.Tensor) -> torch.Tensor:
            return x + torch.tensor(1.0) + torch.as_tensor(2.0)

        return torch.jit.script(f)(torch.ones(2)).tolist()

    results["scripted"] = [attempt(imported), attempt(script), str(torch.tensor([1.0], device="npu").device)]


class TiedLM(torch.nn.Module):
    """nanoGPT / llm.c GPT: the output head shares the token embedding's weight; an LSTM
    inside (word_language_model) keeps weak references to its weights."""

    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(11, 6)
        self.rnn = torch.nn.LSTM(6, 6)
        self.ln = torch.nn.LayerNorm(6)
        self.lm_head = torch.nn.Linear(6, 11, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx, targets):
        logits = self.lm_head(self.ln(self.rnn(self.wte(idx))[0]))
        return torch.nn.functional.cross_entropy(logits.view(-1, 11), targets.view(-1))


def tied() -> None:
    """model.to("npu") keeps each Parameter object (torch_npu sets param.data in place):
    tied weights stay one, an optimizer built before the move trains the moved model."""
    idx, targets = torch.randint(0, 11, (2, 5), generator=torch.Generator().manual_seed(0)).unbind(0)
    losses = {}
    for dev in ("cpu", "npu"):
        torch.manual_seed(0)
        model = TiedLM()
        first = model.lm_head.weight
        opt = torch.optim.AdamW(model.parameters(), lr=0.1)
        model.to(dev)
        losses[dev] = []
        for _ in range(3):
            loss = model(idx.to(dev), targets.to(dev))
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses[dev].append(loss.item())
    results["tied"] = [
        model.wte.weight is model.lm_head.weight,
        model.lm_head.weight is first,
        str(first.device),
        max(abs(a - b) for a, b in zip(losses["cpu"], losses["npu"])),
        model.cpu().wte.weight is model.lm_head.weight,
    ]


def _hogwild_worker(model, x, seen) -> None:
    seen.put([str(p.device) for p in model.parameters()])
    loss = model(x).sum()
    loss.backward()
    with torch.no_grad():
        model.weight.add_(1.0)


def shared() -> None:
    """pytorch/examples mnist_hogwild: a model on the NPU passed to mp.Process arrives on
    the NPU, over the same memory (the parent sees the child's update)."""
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    model = torch.nn.Linear(2, 1).to("npu")
    model.share_memory()
    before = model.weight.detach().cpu().clone()
    seen = ctx.Queue()
    proc = ctx.Process(target=_hogwild_worker, args=(model, torch.ones(3, 2, device="npu"), seen))
    proc.start()
    devices = seen.get(timeout=900)
    proc.join(timeout=900)
    updated = torch.equal(model.weight.detach().cpu(), before + 1)
    results["shared"] = [devices, proc.exitcode, updated]


def integers() -> None:
    """pytorch/examples ddp-tutorial single_gpu.py: `device = 0  # shorthand for cuda:0`,
    then `model.to(gpu_id)`. torch takes an integer device for the current accelerator's
    (PrivateUse1 once torch_npu registers it), so the unported script reaches the NPU."""
    model = torch.nn.Linear(2, 1).to(0)
    results["integers"] = [
        str(torch.device(0)),
        str(model.weight.device),
        torch.zeros(1, device=1).device.type,  # tensors carry npu:0 here (docs/emulate.md)
        str(torch.ones(1).to(0).device),
    ]


def tensors_among_numbers() -> None:
    """kornia's tests: `torch.tensor((cos, cos, 0.0, 0.0), device=device)` with `cos` a 0-d
    NPU tensor (the emulated one raised "len() of a 0-d tensor"), nested too."""
    cos = torch.cos(torch.tensor(0.0)).to("npu")
    flat = torch.tensor((cos, cos, 0.0, 2), device="npu", dtype=torch.float32)
    nested = torch.tensor([[cos, 1.0], (2.0, cos)], device="npu")
    on_host = torch.tensor([cos, 7.0])  # a CPU tensor of NPU values
    image = torch.zeros(1, 3, 3, device="npu")  # kornia's draw_point2d
    x, y = zip(*torch.tensor([[1, 2], [0, 1]], device="npu"))
    image[:, y, x] = 5.0
    results["tensors_among_numbers"] = [
        str(flat.device),
        flat.cpu().tolist(),
        nested.cpu().tolist(),
        [str(on_host.device), on_host.tolist()],
        image.cpu().nonzero().tolist(),
    ]


class Slotted:
    """kornia's TensorWrapper: its tensor in a slot, attribute writes forwarded to it."""

    __slots__ = ("_data",)

    def __init__(self, t):
        object.__setattr__(self, "_data", t)

    def __setattr__(self, name, value):
        setattr(self._data, name, value)

    def __getstate__(self):
        return {"_data": self._data}

    def __setstate__(self, state):
        object.__setattr__(self, "_data", state["_data"])


class Plane(torch.nn.Module):
    """kornia's Hyperplane: a module holding its tensors as plain attributes."""

    def __init__(self, offset):
        super().__init__()
        self.offset = offset


def saved_objects() -> None:
    """Tensors in a slot and in a module's plain attribute come back on the NPU."""
    buf = io.BytesIO()
    torch.save(
        {"slotted": Slotted(torch.ones(2, device="npu")), "plane": Plane(torch.ones(1, device="npu"))}, buf
    )
    buf.seek(0)
    got = torch.load(buf, weights_only=False)
    results["saved_objects"] = [
        str(object.__getattribute__(got["slotted"], "_data").device),
        str(got["plane"].offset.device),
    ]


def complex_views() -> None:
    """kornia's fft_conv: a product with torch.conj(y) (a conjugate view), and a negative
    view, give what the CPU gives."""
    torch.manual_seed(0)
    x, y = torch.randn(2, 3, dtype=torch.complex64), torch.randn(2, 3, dtype=torch.complex64)
    image = torch.randn(1, 1, 4, 4)

    def compute(d):
        a, b = x.to(d), y.to(d)
        spectrum = torch.fft.rfftn(image.to(d), dim=(-2, -1))
        back = torch.fft.irfftn(spectrum * torch.conj(spectrum), s=(4, 4), dim=(-2, -1))
        return [(a * torch.conj(b)).cpu(), (a + torch._neg_view(b)).cpu(), back.cpu()]

    results["complex_views"] = [
        torch.allclose(n, c) for n, c in zip(compute("npu"), compute("cpu"), strict=True)
    ]


if __name__ == "__main__":
    saved_objects()
    complex_views()
    tensors_among_numbers()
    integers()
    accelerator()
    scripted()
    tied()
    shared()
    models()
    save_load()
    reports()
    (OUT / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
