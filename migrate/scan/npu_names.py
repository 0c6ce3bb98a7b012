"""Does a text name the NPU? The one predicate every engine asks.

"npu" (or "hccl", its collective backend) as a part of a name, not inside a longer word:
``is_npu_available``, ``NPU_Accelerator``, ``torch_npu``, ``"hccl"`` name it; ``input``
and ``snpu`` do not. Case does not matter (``NpuRMSNorm``).
"""

from __future__ import annotations

import re

_PART = r"(?<![a-z])(?:npu|hccl)|(?:npu|hccl)(?![a-z])"
NPU_NAME = re.compile(_PART, re.IGNORECASE)
_NPU_NAME_BYTES = re.compile(_PART.encode(), re.IGNORECASE)


def names_npu(text: str | bytes) -> bool:
    """Whether ``text`` (a name, an expression or a whole file) names the NPU. A substring
    test first, the name-part test only where it hits."""
    if isinstance(text, bytes):
        return may_name_npu(text.lower()) and _NPU_NAME_BYTES.search(text) is not None
    return may_name_npu(text.lower()) and NPU_NAME.search(text) is not None


def may_name_npu(lowered: str | bytes) -> bool:
    """The substring test on lower-cased text: "hccl", or an "npu" that is not the one inside
    "input" (every "input" holds exactly one "npu", and neither word overlaps itself, so the
    counts tell without copying the text)."""
    if isinstance(lowered, bytes):
        return b"hccl" in lowered or lowered.count(b"npu") > lowered.count(b"input")
    return "hccl" in lowered or lowered.count("npu") > lowered.count("input")


# CUDA's words whose NPU counterparts ("npu", "hccl") NPU_NAME finds: cuda and nccl.
CUDA_WORD = re.compile(r"cuda|nccl", re.IGNORECASE)
# Any word of NVIDIA's stack (cuDNN, NVML, cuBLAS ... hold no "cuda"): code naming one is CUDA's.
CUDA_STACK = re.compile(
    r"cuda|nccl|cudnn|nvidia|nvml|nvtx|cublas|cufft|curand|cusparse|cusolver|cupy", re.IGNORECASE
)
