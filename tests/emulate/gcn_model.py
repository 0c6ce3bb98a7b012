"""A two-layer graph convolutional network over a sparse COO adjacency matrix and sparse
node features (the layout pytorch/examples' gcn uses): ``torch.mm`` of the sparse matrices
(SparseNPU kernels in torch_npu 2.14.0), the sparse tensors built on the device and moved to
it, and ``torch.sparse.mm``, whose composite calls ``addmm``, which has no SparseNPU kernel."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

NODES, FEATURES, CLASSES = 6, 5, 3


class GraphConv(nn.Module):
    def __init__(self, n_in: int, n_out: int, sparse_mm: bool):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_in, n_out) * 0.5)
        self.bias = nn.Parameter(torch.zeros(n_out))
        self.sparse_mm = sparse_mm

    def forward(self, x, adj):
        support = torch.mm(x, self.weight)
        mixed = torch.sparse.mm(adj, support) if self.sparse_mm else torch.mm(adj, support)
        return mixed + self.bias


class GCN(nn.Module):
    def __init__(self, sparse_mm: bool = False):
        super().__init__()
        self.gc1 = GraphConv(FEATURES, 8, sparse_mm)
        self.gc2 = GraphConv(8, CLASSES, sparse_mm)

    def forward(self, x, adj):
        return F.log_softmax(self.gc2(F.relu(self.gc1(x, adj)), adj), dim=1)


def graph(device: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(sparse features, normalised sparse adjacency with self-loops, labels) on ``device``:
    the adjacency built there by ``torch.sparse_coo_tensor``, the features moved there."""
    ring = torch.arange(NODES)
    edges = torch.cat([torch.stack([ring, (ring + 1) % NODES]), torch.stack([ring, ring])], dim=1)
    degree = torch.bincount(edges[0], minlength=NODES).float()
    weights = degree[edges[0]].rsqrt() * degree[edges[1]].rsqrt()
    adj = torch.sparse_coo_tensor(edges, weights, (NODES, NODES), device=device).coalesce()
    features = (torch.rand(NODES, FEATURES) > 0.5).float().to_sparse().to(device)
    labels = (torch.arange(NODES) % CLASSES).to(device)
    return features, adj, labels


def build():
    torch.manual_seed(0)
    features, adj, _ = graph("cpu")
    return GCN(), (features, adj)


def build_sparse_mm():
    torch.manual_seed(0)
    features, adj, _ = graph("cpu")
    return GCN(sparse_mm=True), (features, adj)


def step(device: str) -> dict:
    """Three training steps: the losses, and what the sparse tensors are on ``device``."""
    torch.manual_seed(0)
    model = GCN().to(device)
    features, adj, labels = graph(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(3):
        optimizer.zero_grad()
        loss = F.nll_loss(model(features, adj), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return {
        "losses": losses,
        "adj": [str(adj.device), str(adj.layout), adj._nnz(), adj.is_coalesced()],
        "values": adj.values().sum().item(),
        "dense": adj.to_dense().sum().item(),
        "doubled": (adj * 2).to_dense().sum().item(),
    }


def sparse_mm(device: str) -> str:
    """``torch.sparse.mm`` of the adjacency on ``device``: the error, or 'ran'."""
    torch.manual_seed(0)
    model = GCN(sparse_mm=True).to(device)
    features, adj, _ = graph(device)
    try:
        model(features, adj)
    except NotImplementedError as exc:
        return str(exc)
    return "ran"
