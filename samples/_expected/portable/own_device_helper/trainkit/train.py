"""One epoch of a tiny classifier with mixed precision on the GPU."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from trainkit.accel import get_device_name, get_torch_device
from trainkit.data import make_loader, to_gpu


def build_model() -> nn.Module:
    torch.manual_seed(0)
    get_torch_device().manual_seed_all(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(
        get_device_name()
    )


def train_epoch(model: nn.Module, steps: int = 4) -> float:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    use_amp = get_torch_device().is_available()
    scaler = get_torch_device().amp.GradScaler(enabled=use_amp)
    loss = torch.zeros(())
    for i, batch in enumerate(make_loader()):
        if i == steps:
            break
        x, y = to_gpu(batch)
        opt.zero_grad()
        with torch.autocast(
            device_type=get_device_name(), dtype=torch.float16, enabled=use_amp
        ):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    if get_torch_device().is_available():
        get_torch_device().synchronize()
    print(f"peak memory {get_torch_device().max_memory_allocated() / 2**20:.0f} MiB")
    get_torch_device().empty_cache()
    return loss.item()
