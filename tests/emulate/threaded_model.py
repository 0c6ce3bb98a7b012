"""Work done in threads on the device: a ``threading.Thread`` worker that trains a layer
(float64 included) and reads its loss with ``.item()``, and a ThreadPoolExecutor that
evaluates on the device. The main thread only starts them and waits."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn


def _train(device: str, out: dict) -> None:
    torch.manual_seed(0)
    layer = nn.Linear(4, 3).to(device)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    x = torch.randn(8, 4).to(device)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = layer(x).pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    out["losses"] = losses
    out["double"] = x.double().sum().item()


def _evaluate(device: str, seed: int, both: threading.Barrier) -> float:
    torch.manual_seed(seed)
    value = torch.randn(5, 5).to(device).abs().sum()
    both.wait(timeout=600)  # each task in its own thread: the pool reuses an idle one otherwise
    return float(value.item())


def run(device: str) -> dict:
    out: dict = {}
    worker = threading.Thread(target=_train, args=(device, out), name="trainer")
    worker.start()
    worker.join()
    both = threading.Barrier(2)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="evaluator") as pool:
        out["evals"] = list(pool.map(lambda s: _evaluate(device, s, both), range(2)))
    return out


class Branches(nn.Module):
    """A forward that runs one branch in a worker thread (as pipelines with a prefetching
    or a parallel-branch thread do); the branch reads a value on the host and uses float64."""

    def __init__(self) -> None:
        super().__init__()
        self.left, self.right = nn.Linear(4, 4), nn.Linear(4, 4)

    def _right(self, x):
        y = self.right(x)
        scale = y.double().abs().max().item()
        return y / scale

    def forward(self, x):
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="branch") as pool:
            right = pool.submit(self._right, x)
            left = self.left(x).relu()
            return left + right.result()


def build():
    torch.manual_seed(0)
    return Branches(), (torch.randn(3, 4),)


if __name__ == "__main__":
    print(run("npu"))
