"""One training step of a tiny model; runs on CUDA, and on CPU where there is no GPU."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_batch(device, n=16):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 8, generator=g)
    y = torch.randint(0, 4, (n,), generator=g)
    return x.to(device), y.to(device)


def train_step(steps=1):
    torch.manual_seed(0)
    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
    if torch.accelerator.is_available():
        (torch.npu if hasattr(torch, "npu") else torch.cuda).manual_seed_all(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    use_amp = torch.device(device).type in ("cuda", "npu")
    scaler = torch.amp.GradScaler(getattr(torch.accelerator.current_accelerator(), "type", "cuda"), enabled=use_amp)
    x, y = make_batch(device)
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast(device_type=getattr(torch.accelerator.current_accelerator(), "type", "cuda"), dtype=torch.float16, enabled=use_amp):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    if torch.accelerator.is_available():
        torch.accelerator.synchronize()
    print(f"peak {(torch.npu if hasattr(torch, 'npu') else torch.cuda).max_memory_allocated() / 2**20:.0f} MiB")
    return loss.item()


if __name__ == "__main__":
    print(train_step())
