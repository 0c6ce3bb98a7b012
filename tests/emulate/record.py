"""Test driver: run a script as its user would and record what the tests compare.

python record.py OUT.json SCRIPT ARGS...  (OUT.json.RANK under torchrun)

Records every scalar loss a ``.backward()`` starts from (in order) and the device types of
the parameters of every module the script calls; the script runs as ``__main__`` with
``sys.argv = [SCRIPT, *ARGS]`` and its folder first on ``sys.path``, seeded as
``torch.manual_seed(0)`` would seed it."""

import json
import os
import runpy
import sys

import torch

out, args = sys.argv[1], sys.argv[2:]
if "RANK" in os.environ:
    out = f"{out}.{os.environ['RANK']}"
record = {"losses": [], "param_devices": []}
_backward = torch.Tensor.backward
_depth = [0]


def backward(self, *a, **k):
    _depth[0] += 1  # a tensor subclass re-enters through __torch_function__: count once
    try:
        if _depth[0] == 1 and self.numel() == 1:
            record["losses"].append(float(self.detach().cpu()))
        return _backward(self, *a, **k)
    finally:
        _depth[0] -= 1


def seen(module, inputs, output):
    for p in module.parameters(recurse=False):
        if p.device.type not in record["param_devices"]:
            record["param_devices"].append(p.device.type)


torch.Tensor.backward = backward
torch.nn.modules.module.register_module_forward_hook(seen)
torch.manual_seed(0)
sys.argv = args
sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
try:
    runpy.run_path(args[0], run_name="__main__")
finally:
    with open(out, "w") as fh:
        json.dump(record, fh)
