"""torch_npu.npu_deformable_conv2d, the modulated deformable convolution (DCNv2) that
torch_npu.contrib's ``ModulatedDeformConv`` and Ascend's mmcv call, with the signature of
torch_npu 2.14.0 and the layouts its callers and meta function fix:

* ``self`` [N, C, H, W], ``weight`` [O, C / groups, kh, kw]; ``stride`` and ``dilation``
  4 values, the last two for height and width; ``padding`` (top, bottom, left, right);
* ``offset`` [N, 3 * dg * kh * kw, OH, OW]: every x offset (deformable group, then kernel
  point in row-major order), then every y offset, then the masks: contrib's
  ``ModulatedDeformConv`` reorders mmcv's interleaved (y, x) pairs into this and appends
  the sigmoid mask;
* returns the output [N, O, OH, OW] and the deformed input [N, C, OH * kh, OW * kw], each
  output position's kh x kw samples (bilinear, 0 outside the image, times the mask) laid
  out so that a convolution with stride (kh, kw) gives the output.

Plain PyTorch (``grid_sample`` and ``conv2d``), so autograd gives the backward; the wheel
has no ``npu_deformable_conv2dbk`` to emulate.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from migrate.emulate.fused import fused_op


def _four(name: str, values) -> tuple[int, int, int, int]:
    values = tuple(int(v) for v in values)
    if len(values) != 4:
        raise ValueError(f"npu_deformable_conv2d: {name} takes 4 values, got {list(values)}")
    return values


def _grid(offset, size, kernel, stride, padding, dilation, groups):
    """The sampling grid [N * dg, OH * kh, OW * kw, 2] (x, y in grid_sample's units) and the
    masks [N, dg, OH * kh, OW * kw]."""
    (height, width), (kh, kw), (n, _, oh, ow) = size, kernel, offset.shape
    split = offset.reshape(n, 3, groups, kh, kw, oh, ow).permute(1, 0, 2, 5, 3, 6, 4)
    dx, dy, mask = (part.reshape(n, groups, oh * kh, ow * kw) for part in split)  # (oh, i) and (ow, j)
    steps = {"dtype": offset.dtype, "device": offset.device}
    base_y = (torch.arange(oh, **steps) * stride[0] - padding[0])[:, None]
    base_y = (base_y + torch.arange(kh, **steps) * dilation[0]).reshape(-1)
    base_x = (torch.arange(ow, **steps) * stride[1] - padding[1])[:, None]
    base_x = (base_x + torch.arange(kw, **steps) * dilation[1]).reshape(-1)
    y = base_y[:, None] + dy
    x = base_x[None, :] + dx
    # pixel p -> (2p + 1) / size - 1 (align_corners=False): any size, 0 outside the image
    grid = torch.stack([(2 * x + 1) / width - 1, (2 * y + 1) / height - 1], dim=-1)
    return grid.reshape(n * groups, oh * kh, ow * kw, 2), mask


@fused_op("npu_deformable_conv2d")
def npu_deformable_conv2d(
    self,
    weight,
    offset,
    bias,
    kernel_size,
    stride,
    padding,
    dilation=(1, 1, 1, 1),
    groups=1,
    deformable_groups=1,
    modulated=True,
):
    """(output [N, O, OH, OW], deformed input [N, C, OH * kh, OW * kw]): the modulated
    deformable convolution (DCNv2) of ``self`` [N, C, H, W], ``offset`` in contrib's layout
    (every x offset, every y offset, then the masks), bilinear samples 0 outside the image."""
    if not modulated:
        raise ValueError("npu_deformable_conv2d: only modulated=True (DCNv2) is supported, as on the device")
    if self.dim() != 4 or weight.dim() != 4 or offset.dim() != 4:
        shapes = [tuple(t.shape) for t in (self, weight, offset)]
        raise ValueError(f"npu_deformable_conv2d: input, weight and offset must be 4-D (NCHW), got {shapes}")
    n, channels, height, width = self.shape
    kh, kw = weight.shape[-2:]
    if sorted(int(k) for k in kernel_size) != sorted((kh, kw)):
        given = list(kernel_size)
        raise ValueError(f"npu_deformable_conv2d: kernel_size {given} is not the weight's {[kh, kw]}")
    stride4, pad4, dil4 = _four("stride", stride), _four("padding", padding), _four("dilation", dilation)
    if min(stride4[2:] + dil4[2:]) < 1 or min(pad4) < 0:
        raise ValueError(
            f"npu_deformable_conv2d: stride and dilation must be >= 1 and padding >= 0, got "
            f"{list(stride4)}, {list(dil4)}, {list(pad4)}"
        )
    oh = (height + pad4[0] + pad4[1] - ((kh - 1) * dil4[2] + 1)) // stride4[2] + 1
    ow = (width + pad4[2] + pad4[3] - ((kw - 1) * dil4[3] + 1)) // stride4[3] + 1
    dg = int(deformable_groups)
    if offset.shape != (n, 3 * dg * kh * kw, oh, ow) or channels % dg:
        raise ValueError(
            f"npu_deformable_conv2d: offset must be [{n}, {3 * dg * kh * kw}, {oh}, {ow}] for this "
            f"input and kernel (C divisible by deformable_groups), got {tuple(offset.shape)}"
        )
    grid, mask = _grid(
        offset.to(self.dtype), (height, width), (kh, kw), stride4[2:], (pad4[0], pad4[2]), dil4[2:], dg
    )
    sampled = F.grid_sample(
        self.reshape(n * dg, channels // dg, height, width), grid, align_corners=False, padding_mode="zeros"
    )
    sampled = sampled.reshape(n, dg, channels // dg, oh * kh, ow * kw) * mask[:, :, None]
    deformed = sampled.reshape(n, channels, oh * kh, ow * kw)
    output = F.conv2d(deformed, weight, bias, stride=(kh, kw), groups=int(groups))
    return output, deformed
