"""One training step of a tiny model; runs on CUDA, and on CPU where there is no GPU."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def is_npu_available() -> bool:
    """Whether this host has an Ascend NPU."""
    npu = getattr(torch, "npu", None)
    return npu is not None and npu.is_available()


def make_batch(device, n=16):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 8, generator=g)
    y = torch.randint(0, 4, (n,), generator=g)
    return x.to(device), y.to(device)


def train_step(steps=1):
    torch.manual_seed(0)
    device = (
        "cuda" if torch.cuda.is_available() else "npu" if is_npu_available() else "cpu"
    )
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(0)
    elif is_npu_available():
        torch.npu.manual_seed_all(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    use_amp = torch.device(device).type in ("cuda", "npu")
    torch_device = torch.npu if is_npu_available() else torch.cuda
    scaler = torch_device.amp.GradScaler(enabled=use_amp)
    x, y = make_batch(device)
    for _ in range(steps):
        opt.zero_grad()
        device_type = "npu" if is_npu_available() else "cuda"
        with torch.autocast(
            device_type=device_type, dtype=torch.float16, enabled=use_amp
        ):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    elif is_npu_available():
        torch.npu.synchronize()
    print(f"peak {torch_device.max_memory_allocated() / 2**20:.0f} MiB")
    return loss.item()


if __name__ == "__main__":
    print(train_step())
