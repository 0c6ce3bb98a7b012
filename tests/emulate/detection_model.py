"""A small torchvision Faster R-CNN (a two-layer backbone, 96-pixel images): anchors, RPN,
``torchvision::nms`` and ``roi_align`` and the box losses of the real model, at a size a test
can train. ``build`` is a ``migrate ops --torch`` factory; ``step`` one training step."""

from __future__ import annotations

import torch
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.ops import MultiScaleRoIAlign


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    backbone = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, stride=2, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 16, 3, stride=2, padding=1),
        torch.nn.ReLU(),
    )
    backbone.out_channels = 16
    anchors = AnchorGenerator(sizes=((16, 32),), aspect_ratios=((0.5, 1.0, 2.0),))
    pool = MultiScaleRoIAlign(featmap_names=["0"], output_size=4, sampling_ratio=2)
    return FasterRCNN(
        backbone,
        num_classes=4,
        min_size=96,
        max_size=96,
        rpn_anchor_generator=anchors,
        box_roi_pool=pool,
        rpn_batch_size_per_image=32,
        box_batch_size_per_image=16,
        rpn_pre_nms_top_n_train=200,
        rpn_post_nms_top_n_train=50,
        representation_size=32,
    )


def batch(device="cpu"):
    g = torch.Generator().manual_seed(1)
    images = [torch.rand(3, 96, 96, generator=g).to(device) for _ in range(2)]
    targets = [
        {
            "boxes": torch.tensor([[10.0, 12.0, 50.0, 60.0], [30.0, 20.0, 90.0, 70.0]]).to(device),
            "labels": torch.tensor([1, 3]).to(device),
        }
        for _ in range(2)
    ]
    return images, targets


def build():
    return model(), batch()


def step(device: str, steps: int = 2) -> list[float]:
    """Training steps on ``device``: the summed losses, as a user's loop would log them."""
    net = model().to(device).train()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, foreach=False)
    images, targets = batch(device)
    losses = []
    for _ in range(steps):
        loss = sum(net(images, targets).values())
        losses.append(float(loss.detach()))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return losses
