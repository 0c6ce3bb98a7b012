"""MOD:FN factories used by the ATen capture tests (real PyTorch models)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812


class SupportedOnly(nn.Module):
    """Linear, LayerNorm, SDPA, matmul, a transpose and GELU: all run on the NPU."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.norm = nn.LayerNorm(16)
        self.lstm = nn.LSTM(16, 16, batch_first=True)

    def forward(self, x):
        h = self.norm(x)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        a = F.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None])[:, 0]
        s = torch.matmul(a, h.transpose(1, 2)) @ h
        out, _ = self.lstm(s)
        d = torch.cdist(out, a)  # CompositeImplicitAutograd with an NPU kernel
        return F.gelu(out + a).sum(-1).t() + F.softmax(d, dim=-1).sum()


class Special(nn.Module):
    """Ops with no NPU kernel in torch_npu 2.14.0: i1, eigh, lgamma."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        w = torch.linalg.eigh(y @ y.mT)[0]
        return torch.special.i1(y).sum() + torch.lgamma(y.abs() + 1).sum() + w.sum()


def supported():
    torch.manual_seed(0)
    return SupportedOnly().eval(), (torch.randn(2, 5, 16),)


def special():
    torch.manual_seed(0)
    return Special().eval(), (torch.randn(4, 4),), {}


def raises():
    raise RuntimeError("factory failed on purpose")


def not_a_tuple():
    return nn.Linear(2, 2)


def model_fails():
    return nn.Linear(2, 2), (torch.randn(3, 5),)


class Scatters(nn.Module):
    """Ops torch serves on the NPU's key with a CompositeExplicitAutogradNonFunctional kernel
    (no torch_npu kernel of their own): supported through what they call."""

    def forward(self, x):
        up = F.pixel_shuffle(x, 2)
        down = F.pixel_unshuffle(up, 2)
        flat = down.flatten(1)
        s = torch.slice_scatter(flat, flat[:, :2] * 2, dim=1, start=0, end=2)
        s = torch.select_scatter(s, s[:, 0] + 1, 1, 0)
        sq = s[:, :4].reshape(-1, 2, 2)
        d = torch.diagonal_scatter(sq, torch.ones(sq.shape[0], 2), dim1=1, dim2=2)
        return torch.diag_embed(d.sum(-1)).sum() + x.detach().sum()


class Fallbacks(nn.Module):
    """Ops with no NPU kernel in torch_npu 2.14.0, a few with rewrites in rewrites.yaml."""

    def forward(self, a, b):
        x = torch.lgamma(a.abs() + 1) + torch.digamma(a.abs() + 1) + torch.special.i0(a)
        m = b @ b.mT + 4 * torch.eye(b.shape[-1])
        return (
            x.sum()
            + torch.linalg.det(m).sum()
            + torch.linalg.inv(m).sum()
            + torch.linalg.eigh(m)[0].sum()
            + torch.linalg.solve(m, b).sum()
        )


class HostSync(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        mask = y > 0
        kept = y[mask]
        n = torch.nonzero(mask).shape[0] + torch.unique(mask.int()).numel()
        return kept.sum() * float(y.sum().item()) + n


def scatters():
    return Scatters(), (torch.randn(2, 4, 2, 2),)


def fallbacks():
    torch.manual_seed(0)
    return Fallbacks(), (torch.randn(3, 4), torch.randn(2, 3, 3))


def host_sync():
    torch.manual_seed(0)
    return HostSync(), (torch.randn(3, 4),)


def scripted():
    return torch.jit.script(nn.Linear(2, 2)), (torch.randn(1, 2),)


class Exits(nn.Module):
    def forward(self, x):
        raise SystemExit(3)


class Generates(nn.Module):
    def forward(self, x):
        yield x + 1


def exits():
    return Exits(), (torch.randn(2),)


def generates():
    return Generates(), (torch.randn(2),)


def with_loss():
    """The dict form: a loss callable the training step uses."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3))
    target = torch.tensor([0, 2])
    return {"model": model, "args": (torch.randn(2, 4),), "loss": lambda out: F.cross_entropy(out, target)}


def _hf_bert():
    import transformers

    cfg = transformers.BertConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
    )
    return transformers.BertForSequenceClassification(cfg)


def bert():
    torch.manual_seed(0)
    ids = torch.randint(0, 64, (2, 8))
    return _hf_bert(), (), {"input_ids": ids, "labels": torch.tensor([0, 1])}


def vit():
    import transformers

    torch.manual_seed(0)
    cfg = transformers.ViTConfig(
        image_size=16,
        patch_size=8,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        num_labels=3,
    )
    model = transformers.ViTForImageClassification(cfg)
    return model, (), {"pixel_values": torch.randn(2, 3, 16, 16), "labels": torch.tensor([0, 2])}


def llama():
    import transformers

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=32,
        max_position_embeddings=16,
    )
    ids = torch.randint(0, 64, (2, 8))
    return transformers.LlamaForCausalLM(cfg), (), {"input_ids": ids, "labels": ids}


class TrainingWrapper(nn.Module):
    """A module whose forward runs a whole training step (as some trainers wrap models)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))

    def forward(self, x):
        with torch.enable_grad():
            loss = self.net(x).pow(2).mean()
            loss.backward()
        return loss.detach()


def training_wrapper():
    torch.manual_seed(0)
    return TrainingWrapper(), (torch.randn(3, 4),)


def t5():
    import transformers

    torch.manual_seed(0)
    cfg = transformers.T5Config(
        vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2, decoder_start_token_id=0
    )
    ids = torch.randint(0, 64, (2, 8))
    return transformers.T5ForConditionalGeneration(cfg), (), {"input_ids": ids, "labels": ids}


def whisper():
    import transformers

    torch.manual_seed(0)
    cfg = transformers.WhisperConfig(
        vocab_size=64,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        num_mel_bins=8,
        max_source_positions=8,
        max_target_positions=16,
        pad_token_id=0,
        decoder_start_token_id=1,
    )
    return (
        transformers.WhisperForConditionalGeneration(cfg),
        (),
        {"input_features": torch.randn(2, 8, 16), "labels": torch.randint(2, 64, (2, 5))},
    )


def mixtral():
    import transformers

    torch.manual_seed(0)
    cfg = transformers.MixtralConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=32,
        num_local_experts=4,
        num_experts_per_tok=2,
        max_position_embeddings=16,
    )
    ids = torch.randint(0, 64, (2, 8))
    return transformers.MixtralForCausalLM(cfg), (), {"input_ids": ids, "labels": ids}


class GraphConv(nn.Module):
    """A GCN layer as pytorch/examples' gcn writes it: ``torch.sparse.mm`` of a sparse
    adjacency matrix with the transformed features, ``torch.mm`` on the same matrix (its
    SparseNPU kernel), and the dense form of the matrix (``to_dense``)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, adj, x):
        h = self.lin(x)
        return torch.sparse.mm(adj, h) + torch.mm(adj, h) + adj.to_dense() @ h


def _adjacency(layout: str) -> torch.Tensor:
    dense = torch.eye(5) + torch.diag(torch.ones(4), 1)
    return dense.to_sparse() if layout == "coo" else dense.to_sparse_csr()


def gcn():
    torch.manual_seed(0)
    return GraphConv(), (_adjacency("coo"), torch.randn(5, 4))


def gcn_csr():
    torch.manual_seed(0)
    return GraphConv(), (_adjacency("csr"), torch.randn(5, 4))


class CTCHead(nn.Module):
    """A recogniser's head trained with CTC, lengths given as CPU tensors (a speech model's
    usual call); ``direct=True`` calls the Tensor-lengths overload itself."""

    def __init__(self, direct: bool = False):
        super().__init__()
        self.proj = nn.Linear(6, 5)
        self.direct = direct

    def forward(self, x, targets, input_lengths, target_lengths):
        log_probs = self.proj(x).log_softmax(-1)
        if self.direct:
            return torch.ops.aten._ctc_loss.Tensor(log_probs, targets, input_lengths, target_lengths)[
                0
            ].mean()
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths)


def _ctc_inputs():
    torch.manual_seed(0)
    return (torch.randn(12, 2, 6), torch.randint(1, 5, (2, 4)), torch.tensor([12, 10]), torch.tensor([4, 3]))


def ctc():
    return CTCHead(), _ctc_inputs()


def ctc_direct():
    return CTCHead(direct=True), _ctc_inputs()


class Detections(nn.Module):
    """torchvision's nms and roi_align (no NPU kernel; needs torchvision)."""

    def forward(self, features, boxes, scores):
        import torchvision

        keep = torchvision.ops.nms(boxes, scores, 0.5)
        rois = torch.cat([torch.zeros(len(keep), 1), boxes[keep]], 1)
        return torchvision.ops.roi_align(features, rois, (2, 2), 0.5, 2, True)


def detections():
    g = torch.Generator().manual_seed(0)
    corner = torch.rand(10, 2, generator=g) * 8
    boxes = torch.cat([corner, corner + 1 + torch.rand(10, 2, generator=g) * 4], 1)
    return Detections(), (torch.randn(1, 2, 8, 8, generator=g), boxes, torch.rand(10, generator=g))


class GroupedExperts(nn.Module):
    """Mixture-of-experts feed-forward by ``torch._grouped_mm`` (offsets per expert, as
    Mixtral's grouped path calls it): torch_npu 2.14.0 has no kernel for it, and torch's
    composite reads each expert's offset on the host."""

    def __init__(self, experts: int = 3):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(experts, 16, 8, dtype=torch.bfloat16))

    def forward(self, x, offs):
        return torch._grouped_mm(x, self.weight, offs=offs)


def grouped_experts():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(10, 16, generator=g).to(torch.bfloat16)
    return GroupedExperts(), (x, torch.tensor([3, 7, 10], dtype=torch.int32))
