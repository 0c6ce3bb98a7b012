"""A CTC recogniser head trained as speech models call ``F.ctc_loss``: log-probabilities on
the device, length tensors on the CPU (or on the device). And the Tensor-lengths overload
called itself, which torch_npu has no kernel for (its CPU fallback runs it)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812


def _data(device: str, lengths_on: str):
    torch.manual_seed(0)
    x = torch.randn(12, 2, 6).to(device)
    targets = torch.randint(1, 5, (2, 4)).to(device)
    return x, targets, torch.tensor([12, 10]).to(lengths_on), torch.tensor([4, 3]).to(lengths_on)


def step(device: str, lengths_on: str = "cpu") -> list[float]:
    """Three SGD steps; the losses."""
    x, targets, input_lengths, target_lengths = _data(device, lengths_on)
    torch.manual_seed(1)
    head = nn.Linear(6, 5).to(device)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.5)
    losses = []
    for _ in range(3):
        optimizer.zero_grad()
        loss = F.ctc_loss(head(x).log_softmax(-1), targets, input_lengths, target_lengths)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def tensor_overload(device: str) -> list:
    """``aten::_ctc_loss.Tensor`` with NPU log-probabilities and CPU lengths."""
    x, targets, input_lengths, target_lengths = _data(device, "cpu")
    nll, _alpha = torch.ops.aten._ctc_loss.Tensor(x.log_softmax(-1), targets, input_lengths, target_lengths)
    return [str(nll.device), nll.cpu().tolist()]
