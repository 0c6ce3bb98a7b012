"""Run under `migrate run --emulate npu` by test_apex_amp.py: a ModelZoo-style apex training of
a tiny model at O0, O1 and O2, a dynamic scaler meeting an injected inf, and the scaler's
state_dict; everything the test checks against its own formulas is saved (on the CPU) to
OUT/results.pt.

python amp_checks.py OUT"""

import sys

import apex
import torch
import torch_npu  # noqa: F401 - as the scripts do
from apex import amp

out = sys.argv[1]
g = torch.Generator().manual_seed(0)
X = torch.randn(16, 6, generator=g)
Y = torch.randint(0, 4, (16,), generator=g)


def net():
    nn = torch.nn
    return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 4))


torch.manual_seed(0)  # the starting weights too: the O0/O1 gap below is data-dependent
START = {k: v.clone() for k, v in net().state_dict().items()}


def fresh():
    model = net()
    model.load_state_dict(START)
    return model.npu()


def cpu(tree):
    if isinstance(tree, torch.Tensor):
        return tree.detach().cpu()
    if isinstance(tree, dict):
        return {k: cpu(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [cpu(v) for v in tree]
    return tree


def train(level, steps=3, inject=None, **kwargs):
    model = fresh()
    opt = apex.optimizers.NpuFusedSGD(model.parameters(), lr=0.1)
    model, opt = amp.initialize(model, opt, opt_level=level, combine_grad=True, **kwargs)
    x, y = X.npu(), Y.npu()
    row = {"losses": [], "scales": [], "dtypes": {}, "out_dtype": None, "steps_taken": []}
    for step in range(steps):
        inp = x.clone()
        if step == inject:
            inp[0, 0] = float("inf")
        out = model(inp)
        loss = torch.nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        with amp.scale_loss(loss, opt) as scaled:
            row.setdefault("scaled", []).append(float(scaled))
            scaled.backward()
        before = [p.detach().clone() for p in amp.master_params(opt)]
        opt.step()
        moved = any(not torch.equal(b, p) for b, p in zip(before, amp.master_params(opt)))
        row["steps_taken"].append(moved)
        row["losses"].append(float(loss))
        row["scales"].append(amp.state_dict()["loss_scaler0"]["loss_scale"])
        row["out_dtype"] = str(out.dtype)
    row["dtypes"] = {n: str(p.dtype) for n, p in model.named_parameters()}
    row["devices"] = sorted({str(p.device) for p in model.parameters()})
    row["masters"] = cpu(list(amp.master_params(opt)))
    row["model"] = cpu({n: p for n, p in model.named_parameters()})
    floats = [v for v in model.state_dict().values() if v.is_floating_point()]
    row["state_dict_dtypes"] = sorted({str(v.dtype) for v in floats})
    return row


results = {"start": START, "x": X, "y": Y}
results["O0"] = train("O0")
results["O1"] = train("O1", loss_scale=128.0)
results["O2"] = train("O2", loss_scale=128.0)
results["dynamic"] = train("O2", steps=4, inject=1, loss_scale="dynamic", scale_window=2)

saved = amp.state_dict()
torch.save({"amp": saved}, f"{out}/amp.pt")
amp._amp_state.loss_scalers[0]._loss_scale = 1.0
amp._amp_state.loss_scalers[0]._unskipped = 7
amp.load_state_dict(torch.load(f"{out}/amp.pt")["amp"])
results["state_dict"] = {"saved": dict(saved), "restored": dict(amp.state_dict())}
try:
    amp.load_state_dict({"loss_scaler0": saved["loss_scaler0"], "optimizer": {}})
except RuntimeError as exc:
    results["state_dict"]["bad_key"] = str(exc)
results["missing"] = [hasattr(apex.optimizers, "FusedAdam"), apex.__version__]
torch.save(cpu(results), f"{out}/results.pt")
