"""CPU stand-ins for the accelerator-only kernels that torch's composite ops call on a
non-CPU device (where the CPU takes another path): without them the emulation would fail
where an NPU runs.

``torch.nn.LSTM`` / ``GRU`` on an accelerator decompose (``aten::lstm`` is
CompositeImplicitAutograd) into ``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell`` and their
backward kernels, which have CUDA kernels and no CPU one. torch_npu runs ``aten::lstm`` and
``aten::gru`` as kernels of its own, so these names never reach its device; here they are
computed with the formulas of ATen's fused cells (aten/src/ATen/native/cuda/RNN.cu: gates in
the order i, f, g, o for LSTM and r, z, n for GRU; the same workspace layout), from the CPU
ops, so an emulated RNN computes what the CPU computes.

NPU kernels that take more dtypes than the CPU's: ``nll_loss`` and ``nll_loss2d`` (forward and
backward; what ``F.cross_entropy`` calls) take int32 targets on the NPU (CANN's NLLLoss
documents target INT32, INT64, UINT8; Ascend's ModelZoo scripts cast targets to int32 before
the loss in 118 files), where the CPU kernel accepts int64 and uint8 only: an int32 target is
read as int64, the values and the loss are the same.
"""

from __future__ import annotations

import torch


def _gates(input_gates, hidden_gates, input_bias, hidden_bias):
    gates = input_gates + hidden_gates
    if input_bias is not None:
        gates = gates + input_bias + hidden_bias
    return gates


def lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    """(hy, cy, workspace): workspace holds the activated gates i, f, g, o."""
    i, f, g, o = _gates(input_gates, hidden_gates, input_bias, hidden_bias).chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    return o * cy.tanh(), cy, torch.cat([i, f, g, o], 1)


def lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    """(grad_gates, grad_cx, grad_bias) of :func:`lstm_cell`."""
    i, f, g, o = workspace.chunk(4, 1)
    tanh_cy = cy.tanh()
    grad_c = torch.zeros_like(cy) if grad_cy is None else grad_cy.clone()
    grad_o = torch.zeros_like(o)
    if grad_hy is not None:
        grad_c = grad_c + grad_hy * o * (1 - tanh_cy * tanh_cy)
        grad_o = grad_hy * tanh_cy * o * (1 - o)
    grad_gates = torch.cat(
        [grad_c * g * i * (1 - i), grad_c * cx * f * (1 - f), grad_c * i * (1 - g * g), grad_o], 1
    )
    grad_bias = grad_gates.sum(0) if has_bias else torch.empty(0, dtype=grad_gates.dtype)
    return grad_gates, grad_c * f, grad_bias


def gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    """(hy, workspace): workspace holds r, z, n, hx and the hidden n gate with its bias."""
    if input_bias is not None:
        input_gates, hidden_gates = input_gates + input_bias, hidden_gates + hidden_bias
    ir, iz, in_ = input_gates.chunk(3, 1)
    hr, hz, hn = hidden_gates.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return n + z * (hx - n), torch.cat([r, z, n, hx, hn], 1)


def gru_cell_backward(grad_hy, workspace, has_bias):
    """(grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias)."""
    r, z, n, hx, hn = workspace.chunk(5, 1)
    grad_z = grad_hy * (hx - n) * z * (1 - z)
    grad_n = grad_hy * (1 - z) * (1 - n * n)
    grad_r = grad_n * hn * r * (1 - r)
    grad_input = torch.cat([grad_r, grad_z, grad_n], 1)
    grad_hidden = torch.cat([grad_r, grad_z, grad_n * r], 1)
    empty = torch.empty(0, dtype=grad_input.dtype)
    return (
        grad_input,
        grad_hidden,
        grad_hy * z,
        grad_input.sum(0) if has_bias else empty,
        grad_hidden.sum(0) if has_bias else empty,
    )


def _int32_target(name: str, position: int):
    """``aten::<name>`` with an int32 target (argument ``position``) given as int64."""
    packet = getattr(torch.ops.aten, name)

    def run(*args, **kwargs):
        target = args[position]
        if isinstance(target, torch.Tensor) and target.dtype == torch.int32:
            args = (*args[:position], target.long(), *args[position + 1 :])
        return packet(*args, **kwargs)

    run.__name__ = name
    return run


# ATen op name (func._opname) -> its CPU stand-in.
KERNELS = {
    "nll_loss_forward": _int32_target("nll_loss_forward", 1),
    "nll_loss_backward": _int32_target("nll_loss_backward", 2),
    "nll_loss2d_forward": _int32_target("nll_loss2d_forward", 1),
    "nll_loss2d_backward": _int32_target("nll_loss2d_backward", 2),
    "_thnn_fused_lstm_cell": lstm_cell,
    "_thnn_fused_lstm_cell_backward_impl": lstm_cell_backward,
    "_thnn_fused_gru_cell": gru_cell,
    "_thnn_fused_gru_cell_backward": gru_cell_backward,
}
