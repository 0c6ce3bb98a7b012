"""torch.optim.AdamW / Adam -> torch_npu's fused optimizers (perf advice, MIG901).

The call keeps its arguments; the fix declines when the call passes anything the fused
optimizer does not take (``foreach``, ``fused``, ``maximize``, ``capturable``, ...,
``*args``/``**kwargs``), so a working call never becomes a TypeError.
"""

from __future__ import annotations

import ast

from migrate.core.findings import Draft
from migrate.scan.python.fixers import FixContext, fixer
from migrate.scan.python.fixers._support import bind_args, spell

# Parameters of each fused optimizer's __init__ in the torch_npu 2.14.0 wheel
# (torch_npu/optim/npu_fused_adamw.py, npu_fused_adam.py); defaults equal torch's.
PARAMS = {
    "torch_npu.optim.NpuFusedAdamW": ["params", "lr", "betas", "eps", "weight_decay", "amsgrad"],
    "torch_npu.optim.NpuFusedAdam": ["params", "lr", "betas", "eps", "weight_decay", "amsgrad"],
}


@fixer("npu-fused-optimizer")
def npu_fused_optimizer(ctx: FixContext, call: ast.Call) -> Draft | None:
    target = ctx.target
    params = PARAMS.get(target or "")
    if target is None or params is None or bind_args(call, params) is None:
        return None
    name, imports = spell(ctx, target)
    return Draft(f"Use `{target}` (same arguments)", [ctx.replace(call.func, name)], imports)
