"""One training step of a tiny model; runs on CUDA, and on CPU where there is no GPU."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def get_device_type() -> str:
    """The device type: "cuda" or "npu" (Ascend), else "cpu"."""
    accelerator = getattr(torch, "accelerator", None)  # torch >= 2.6
    if accelerator is not None and accelerator.is_available():
        device_type = accelerator.current_accelerator().type
        if device_type in ("cuda", "npu"):
            return device_type
    return "cuda" if torch.cuda.is_available() else "cpu"


def get_device_module():
    """torch.npu on an Ascend host, else torch.cuda.

    On a host without a GPU its calls do what they did before the port:
    no-ops, zeros, errors.
    """
    if get_device_type() == "npu":
        return torch.get_device_module("npu")
    return torch.cuda


def get_amp_device_type() -> str:
    """The device type for autocast and GradScaler.

    "cuda" without an accelerator, so they stay disabled on a CPU-only host
    as before.
    """
    device_type = get_device_type()
    return "cuda" if device_type == "cpu" else device_type


def make_batch(device, n=16):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 8, generator=g)
    y = torch.randint(0, 4, (n,), generator=g)
    return x.to(device), y.to(device)


def train_step(steps=1):
    torch.manual_seed(0)
    device = get_device_type()
    if get_device_module().is_available():
        get_device_module().manual_seed_all(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    use_amp = torch.device(device).type in ("cuda", "npu")
    scaler = torch.amp.GradScaler(get_amp_device_type(), enabled=use_amp)
    x, y = make_batch(device)
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast(
            device_type=get_amp_device_type(), dtype=torch.float16, enabled=use_amp
        ):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    if get_device_module().is_available():
        get_device_module().synchronize()
    print(f"peak {get_device_module().max_memory_allocated() / 2**20:.0f} MiB")
    return loss.item()


if __name__ == "__main__":
    print(train_step())
