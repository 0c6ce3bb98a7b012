"""Train a small image classifier on one GPU with mixed precision.

Usage:
    python train.py --data ./data --epochs 10 --resume checkpoints/last.pt
"""

from __future__ import annotations

import argparse
import logging
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from data import build_datasets


def is_npu_available() -> bool:
    """Whether this host has an Ascend NPU."""
    npu = getattr(torch, "npu", None)
    return npu is not None and npu.is_available()


logger = logging.getLogger("train")


class SmallNet(nn.Module):
    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.bn = nn.BatchNorm2d(64)
        self.fc = nn.Linear(64 * 8 * 8, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.bn(self.conv2(x))), 2)
        return self.fc(torch.flatten(x, 1))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", default="./data")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--resume", default=None, help="checkpoint to resume from")
    device_type = "npu" if is_npu_available() else "cuda"
    p.add_argument(
        "--device", default=device_type, help="device to train on (cuda or cpu)"
    )
    p.add_argument("--no-amp", action="store_true", help="disable mixed precision on cuda")
    return p.parse_args()


def load_checkpoint(path, model, optimizer, scaler):
    # Checkpoints written on any GPU load onto the current one.
    state = torch.load(path, map_location=("npu" if is_npu_available() else "cuda") + ":0")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scaler.load_state_dict(state["scaler"])
    return state["epoch"] + 1


def train_one_epoch(model, loader, optimizer, scaler, device, use_amp):
    model.train()
    total, start = 0.0, time.time()
    for images, labels in loader:
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with torch.amp.autocast("npu" if is_npu_available() else "cuda", enabled=use_amp):
            loss = F.cross_entropy(model(images), labels)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        total += loss.item()
    torch_device = torch.npu if is_npu_available() else torch.cuda
    torch_device.synchronize()
    logger.info("epoch done in %.1fs, peak memory %.0f MiB", time.time() - start,
                torch_device.max_memory_allocated() / 2**20)
    return total / max(len(loader), 1)


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = seen = 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        device_type = "npu" if is_npu_available() else "cuda"
        with torch.autocast(device_type=device_type, dtype=torch.float16):
            pred = model(images).argmax(dim=1)
        correct += (pred == labels).sum().item()
        seen += labels.numel()
    return correct / max(seen, 1)


def main():
    args = parse_args()
    logging.basicConfig(level=logging.INFO)
    device = torch.device(
        args.device if (torch.cuda.is_available() or is_npu_available()) else "cpu"
    )
    use_amp = device.type in ("cuda", "npu") and not args.no_amp
    # migrate[MIG401]: `torch.backends.cudnn.benchmark` does nothing on NPU: NPUs have no cuDNN autotuner. (see `migrate rules MIG401`)
    torch.backends.cudnn.benchmark = True
    # migrate[MIG402]: `torch.backends.cuda.matmul.allow_tf32` switches TF32, which NPUs lack; the nearest NPU switch is `torch.npu.matmul.allow_hf32` (HF32 for matmuls, off by ... (see `migrate rules MIG402`)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch_device = torch.npu if is_npu_available() else torch.cuda
    torch_device.manual_seed_all(0)

    train_set, val_set = build_datasets(args.data)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              num_workers=4, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=256, num_workers=2)

    model = SmallNet().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    scaler = torch_device.amp.GradScaler(enabled=use_amp)
    first_epoch = 0
    if args.resume and os.path.exists(args.resume):
        first_epoch = load_checkpoint(args.resume, model, optimizer, scaler)
        logger.info("resumed from %s at epoch %d", args.resume, first_epoch)

    os.makedirs("checkpoints", exist_ok=True)
    for epoch in range(first_epoch, args.epochs):
        loss = train_one_epoch(model, train_loader, optimizer, scaler, device, use_amp)
        acc = evaluate(model, val_loader, device)
        logger.info("epoch %d: loss %.4f, val acc %.3f", epoch, loss, acc)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scaler": scaler.state_dict(), "epoch": epoch}, "checkpoints/last.pt")
        torch_device.empty_cache()


if __name__ == "__main__":
    main()
