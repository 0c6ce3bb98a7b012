"""One epoch of a tiny classifier with mixed precision on the GPU."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from trainkit.data import make_loader, to_gpu


def build_model() -> nn.Module:
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).cuda()


def train_epoch(model: nn.Module, steps: int = 4) -> float:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    use_amp = torch.cuda.is_available()
    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    loss = torch.zeros(())
    for i, batch in enumerate(make_loader()):
        if i == steps:
            break
        x, y = to_gpu(batch)
        opt.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    print(f"peak memory {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")
    torch.cuda.empty_cache()
    return loss.item()
