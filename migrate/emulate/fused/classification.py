"""torch_npu.npu_one_hot and npu_softmax_cross_entropy_with_logits, the label and loss ops
of Ascend ModelZoo classifiers (torch_npu.contrib's LabelSmoothingCrossEntropy calls them
in this order), with the signatures of torch_npu 2.14.0's op schemas and the semantics of
its op documentation (torch_npu/_op_plugin_docs.py): TensorFlow's OneHot and
SoftmaxCrossEntropyWithLogits, the kernels they run."""

from __future__ import annotations

import torch

from migrate.emulate.fused import fused_op


@fused_op("npu_one_hot")
def npu_one_hot(input, num_classes=-1, depth=1, on_value=1, off_value=0):
    """float32 one-hot of input along a new last dimension of size depth: on_value at the
    class index, off_value elsewhere and for indices outside [0, depth) (the op
    documentation's example). ``num_classes`` is the one-hot axis (the documentation calls
    it the axis to fill); only its default, -1 (the new dimension last, as in that
    example), is emulated: the wheel shows no other axis's output shape."""
    if num_classes not in (-1, input.dim()):
        raise ValueError(
            f"npu_one_hot: num_classes is the one-hot axis; only -1 (the depth dimension "
            f"last) is emulated (got {num_classes})"
        )
    classes = torch.arange(depth, device=input.device)
    hot = input.long().unsqueeze(-1) == classes
    on = torch.full((), float(on_value), device=input.device)
    off = torch.full((), float(off_value), device=input.device)
    return torch.where(hot, on, off)


class _SoftmaxCrossEntropy(torch.autograd.Function):
    """loss_i = sum_j labels_ij * (logsumexp_i - features_ij); the gradient of the features
    is the kernel's backprop, softmax(features) - labels (labels get none, as in
    torch_npu's derivative: only ``self`` has one)."""

    @staticmethod
    def forward(ctx, features, labels):
        logp = torch.log_softmax(features.float(), dim=-1)
        ctx.save_for_backward(logp, labels)
        ctx.features_dtype = features.dtype
        return (labels.float() * -logp).sum(-1)

    @staticmethod
    def backward(ctx, grad):
        logp, labels = ctx.saved_tensors
        backprop = logp.exp() - labels.float()
        return (grad.unsqueeze(-1) * backprop).to(ctx.features_dtype), None


@fused_op("npu_softmax_cross_entropy_with_logits")
def npu_softmax_cross_entropy_with_logits(features, labels):
    """Per-sample loss sum_j labels_ij * (logsumexp(features_i) - features_ij) of
    batch_size x num_classes features and labels, in float32 (the wheel's meta kernel),
    with the kernel's gradient softmax(features) - labels."""
    if features.dim() != 2 or labels.shape != features.shape:
        raise ValueError(
            "npu_softmax_cross_entropy_with_logits: features and labels must both be "
            f"batch_size x num_classes matrices, got {tuple(features.shape)} and {tuple(labels.shape)}"
        )
    return _SoftmaxCrossEntropy.apply(features, labels)
