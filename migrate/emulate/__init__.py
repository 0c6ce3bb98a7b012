"""An emulated Ascend NPU on the CPU: ``migrate run --emulate npu -- python train.py``.

backend.py registers PyTorch's PrivateUse1 backend as ``npu``; tensor.py holds NPU tensors
as CPU tensors; device.py (with amp, rng, memory, streams) is ``torch.npu``; surface.py is
the fake ``torch_npu`` package built from the wheel's API data; fused/ and optim.py are
reference implementations of torch_npu's fused operators; monitor.py records what the real
device would do differently; report.py renders it; runner.py runs a command under it;
pytest_plugin.py runs a test suite under it. See docs/emulate.md for what it proves.
"""
