"""Op coverage: which operators of a model will not run on Ascend, and fallbacks.

* ``registry``      — op_registry/ data; ``query(source, op, opset, dtype)`` -> Verdict.
* ``onnx_load``     — read a model's graph without weights; clear errors for bad files.
* ``onnx_census``   — per-op verdicts for an ONNX model (ATC or onnxruntime CANN EP).
* ``aten_capture``  — run a PyTorch model once under dispatch capture; per-overload verdicts.
* ``model_spec``    — resolve ``MOD:FN`` and move the model to a device/dtype.
* ``decompose/``    — rewrite rules (one module per op family) and the onnx_ir passes.
* ``verify``        — onnxruntime comparison of two models (max abs error per output).
* ``render``        — text / json / markdown reports.
* ``scan_hook``     — findings for ``migrate scan`` on *.onnx files (rules/onnx.yaml).

torch, onnx, onnx_ir and onnxruntime are imported inside functions only.
"""
