"""ATen op coverage of a PyTorch model (``migrate ops --torch MOD:FN [--train]``).

* ``judge``   — how the NPU's dispatch key is served: torch_npu kernel, torch composite, fallback.
* ``capture`` — the function/dispatch modes that record each overload with its verdict.
* ``where``   — module paths (forward hooks, autograd node tags) and user ``file:line``.
* ``run``     — one eval forward or one training step; device/dtype moves; clear errors.
* ``census``  — the report (docs/contracts.md §4).
"""
