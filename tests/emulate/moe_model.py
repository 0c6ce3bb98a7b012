"""A mixture-of-experts feed-forward as Mixtral's grouped path runs it: tokens sorted by
expert, ``torch._grouped_mm`` with the per-expert offsets. torch_npu 2.14.0 has no kernel
for ``_grouped_mm``; torch's composite, which serves the NPU, reads every offset on the
host (``item()`` per expert)."""

from __future__ import annotations

import torch

EXPERTS = 3


def step(device: str, calls: int = 2) -> list[float]:
    torch.manual_seed(0)
    x = torch.randn(10, 16).to(torch.bfloat16).to(device)
    w = torch.randn(EXPERTS, 16, 8).to(torch.bfloat16).to(device)
    offs = torch.tensor([3, 7, 10], dtype=torch.int32).to(device)
    return [torch._grouped_mm(x, w, offs=offs).float().sum().item() for _ in range(calls)]
