"""Op coverage: which operators of a model will not run on Ascend, and fallbacks.

* ``registry``      — op_registry/ data; ``query(source, op, opset, dtype)`` -> Verdict.
* ``onnx_load``     — read a model's graph without weights; clear errors for bad files.
* ``onnx_census``   — per-op verdicts for an ONNX model (ATC or onnxruntime CANN EP).
* ``onnx_limits``   — ATC's attribute/rank/dtype limits (limits.yaml) as typed checks.
* ``aten/``         — run a PyTorch model under dispatch capture (eval or a training step).
* ``versions``      — the torch used and the torch the registry's torch_npu requires.
* ``decompose/``    — the onnx_ir passes; ``decompose/rules/`` one module per op family.
  (``MOD:FN`` specs are loaded by migrate/core/model_spec.py.)
* ``verify``        — onnxruntime comparison of two models (max abs error per output).
* ``render``        — text / json / markdown reports.
* ``scan_hook``     — findings for ``migrate scan`` on *.onnx files (rules/onnx.yaml).

torch, onnx, onnx_ir and onnxruntime are imported inside functions only.
"""
