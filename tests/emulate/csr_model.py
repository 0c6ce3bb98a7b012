"""Sparse CSR tensors on the device: a graph convolution over a CSR adjacency (``torch.mm``
of CSR by dense: a SparseCsrNPU kernel in torch_npu 2.14.0) trained three steps, the CSR
parts (``crow_indices``, ``col_indices``, ``values``), elementwise ops that keep the layout,
and ``CSR @ vector``, whose ``addmv`` has no SparseCsrNPU kernel (it fails on the device)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

NODES = 6


def adjacency(device: str) -> torch.Tensor:
    """A normalised ring adjacency with self-loops, made CSR on ``device`` by to_sparse_csr."""
    ring = torch.arange(NODES)
    nxt = torch.zeros(NODES, NODES).index_put_((ring, (ring + 1) % NODES), torch.ones(NODES))
    dense = torch.eye(NODES) + nxt
    dense = dense / dense.sum(1, keepdim=True)
    return dense.to(device).to_sparse_csr()


def parts(device: str) -> dict:
    adj = adjacency(device)
    made = torch.sparse_csr_tensor(
        torch.tensor([0, 1, 3]), torch.tensor([1, 0, 1]), torch.tensor([2.0, 3.0, 4.0]), (2, 2), device=device
    )
    return {
        "layout": [str(adj.layout), str(adj.device), str(made.layout), str(made.device)],
        "crow": adj.crow_indices().tolist(),
        "col": adj.col_indices().tolist(),
        "values": adj.values().tolist(),
        "nnz": adj._nnz(),
        "scaled": (adj * 3).to_dense().tolist(),
        "summed": (adj + adj).to_dense().tolist(),
        "made": (made @ torch.tensor([[1.0], [2.0]]).to(device)).cpu().tolist(),
        "cpu": str(adj.cpu().layout),
    }


def step(device: str) -> list[float]:
    """Three Adam steps of a graph convolution over the CSR adjacency; the losses."""
    torch.manual_seed(0)
    adj = adjacency(device)
    x = torch.randn(NODES, 4).to(device)
    labels = (torch.arange(NODES) % 3).to(device)
    layer = nn.Linear(4, 3).to(device)
    optimizer = torch.optim.Adam(layer.parameters(), lr=0.1)
    losses = []
    for _ in range(3):
        optimizer.zero_grad()
        loss = F.cross_entropy(torch.mm(adj, layer(x)), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def matvec(device: str) -> str:
    """``CSR @ vector`` on ``device``: the error, or the result."""
    try:
        return str((adjacency(device) @ torch.ones(NODES).to(device)).cpu().tolist())
    except NotImplementedError as exc:
        return str(exc)
