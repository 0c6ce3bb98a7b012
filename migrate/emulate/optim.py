"""torch_npu.optim's fused optimizers as plain PyTorch optimizers with torch_npu's
constructor signatures. The update rules are those of the torch_npu sources: NpuFusedAdam
is Adam (L2 weight decay), NpuFusedAdamW is AdamW, NpuFusedSGD is SGD, NpuFusedLamb is LAMB
without bias correction (trust ratio clamp(||p||, 0, 10) / ||update||, 1 when either norm is
0 or adam=True; with use_global_grad_norm, gradients are divided by their global norm when
it exceeds 1). The fused kernels differ in rounding only.
"""

from __future__ import annotations

import torch
from torch.optim.optimizer import required


class NpuFusedAdam(torch.optim.Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False):
        super().__init__(
            params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, foreach=False
        )


class NpuFusedAdamW(torch.optim.AdamW):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False):
        super().__init__(
            params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, foreach=False
        )


class NpuFusedSGD(torch.optim.SGD):
    def __init__(self, params, lr=required, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        super().__init__(
            params,
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            foreach=False,
        )


class NpuFusedLamb(torch.optim.Optimizer):
    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-6,
        weight_decay=0,
        adam=False,
        use_global_grad_norm=False,
    ):
        if lr < 0.0 or eps < 0.0 or not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"Invalid NpuFusedLamb hyper-parameters: lr={lr}, eps={eps}, betas={betas}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.adam = adam
        self.use_global_grad_norm = use_global_grad_norm

    def _global_norm(self) -> torch.Tensor | None:
        grads = [p.grad for g in self.param_groups for p in g["params"] if p.grad is not None]
        if not self.use_global_grad_norm or not grads:
            return None
        return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        norm = self._global_norm()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if norm is not None and norm.item() > 1:
                    grad = grad / norm
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                update = exp_avg / exp_avg_sq.sqrt().add(group["eps"])
                if group["weight_decay"] != 0:
                    update.add_(p, alpha=group["weight_decay"])
                trust: float | torch.Tensor = 1.0
                if not self.adam:
                    w = torch.linalg.vector_norm(p).clamp(0, 10)
                    u = torch.linalg.vector_norm(update)
                    trust = torch.where((w == 0) | (u == 0), torch.ones_like(w), w / u)
                p.add_(update * trust, alpha=-group["lr"])
        return loss


OPTIMIZERS = {cls.__name__: cls for cls in (NpuFusedAdam, NpuFusedAdamW, NpuFusedSGD, NpuFusedLamb)}
