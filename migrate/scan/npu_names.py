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
    test first ("input" removed: it holds "npu"), the name-part test only where it hits."""
    if isinstance(text, bytes):
        low_b = text.lower().replace(b"input", b"")
        if b"npu" not in low_b and b"hccl" not in low_b:
            return False
        return _NPU_NAME_BYTES.search(text) is not None
    low = text.lower().replace("input", "")
    if "npu" not in low and "hccl" not in low:
        return False
    return NPU_NAME.search(text) is not None
