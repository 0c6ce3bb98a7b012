"""apex.normalization.FusedRMSNorm -> a small module built on torch_npu.npu_rms_norm.

The constructor call keeps its arguments and builds ``NpuRMSNorm``, a class written into
the file. It has apex's constructor signature and parameter name (``weight``), so
checkpoints load unchanged.
"""

from __future__ import annotations

import ast

from migrate.core.findings import Draft
from migrate.scan.python.fixers import FixContext, fixer
from migrate.scan.python.fixers._support import bind_args, helper_edits, import_group

PARAMS = ["normalized_shape", "eps", "elementwise_affine", "memory_efficient"]
NAME = "NpuRMSNorm"

HELPER = '''\
class NpuRMSNorm(torch.nn.Module):
    """apex FusedRMSNorm on Ascend via torch_npu.npu_rms_norm (written by migrate).

    Same constructor and parameter name (`weight`) as apex, so checkpoints load as before.
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True,
                 memory_efficient=False):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = torch.nn.Parameter(torch.ones(self.normalized_shape))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        weight = self.weight
        if weight is None:
            weight = torch.ones(self.normalized_shape, dtype=x.dtype, device=x.device)
        return torch_npu.npu_rms_norm(x, weight, epsilon=self.eps)[0]
'''

DESCRIPTION = (
    "build NpuRMSNorm, a module written into this file that calls torch_npu.npu_rms_norm; "
    "same parameters and state_dict keys as apex FusedRMSNorm, results differ by rounding"
)


def _accepts(qualname: str, call: ast.Call) -> bool:
    return (
        qualname.startswith("apex.")
        and qualname.endswith("FusedRMSNorm")
        and bind_args(call, PARAMS) is not None
    )


@fixer("fused-rms-norm")
def fused_rms_norm(ctx: FixContext, call: ast.Call) -> Draft | None:
    if not _accepts(ctx.qualname, call):
        return None
    group = import_group(ctx, _accepts)
    uses = group[1] if group else [(call, ctx.qualname)]
    edits = [ctx.replace(c.func, NAME) for c, _ in uses]
    edits += helper_edits(ctx, [(NAME, HELPER)], [c for c, _ in uses], group[0] if group else None)
    return Draft(DESCRIPTION, edits, ["import torch", "import torch_npu"])
