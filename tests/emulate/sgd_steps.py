"""The training loop the distributed check programs share: ``steps`` SGD steps of
``loss_fn(model(x), target)``, the losses as floats. The programs run by path from this
folder, so they import it as a sibling module; the tests train their CPU reference with it
too."""

from __future__ import annotations

import torch


def sgd_steps(model, loss_fn, x, target, steps: int, lr: float = 0.1) -> list[float]:
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        loss = loss_fn(model(x), target)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses
