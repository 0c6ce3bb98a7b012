"""What an Ascend task's name and task type say: its op type, its accelerator core, whether
it is a wait rather than work. Shared by the trace, CSV and .db readers, so one task reads
the same from every file.

Cores are the ``Accelerator Core`` (kernel_details.csv; ``Task Type`` before torch_npu 2.1,
``taskType`` of COMPUTE_TASK_INFO in the .db): AI_CORE, AI_VECTOR_CORE, AI_CPU, MIX_AIC,
MIX_AIV, DSA, ... A collective is core ``HCCL`` whatever the file calls it (``COMMUNICATION``
in kernel_details.csv, the ``HCCL`` / ``Communication`` process of the trace). Older CANN
writes ``Other`` for every task of the trace; the kernel's name then tells AiCpu from AiCore.
"""

from __future__ import annotations

import re

__all__ = ["COMM_TYPES", "CORES", "core_of", "is_wait", "op_type"]

CORES = frozenset(
    {"AI_CORE", "AI_VECTOR_CORE", "AI_CPU", "MIX_AIC", "MIX_AIV", "HCCL", "DSA", "SDMA", "FFTS_PLUS"}
)
# The Accelerator Core / Task Type values of a collective, read as core HCCL.
COMM_TYPES = frozenset({"HCCL", "COMMUNICATION", "HCCL_AI_CPU"})
_NODE_INDEX = re.compile(r"(.*?[A-Za-z])(\d+)$")
# Event and notify waits and records: a stream waiting for another, not computing (CANN's
# overlap analysis counts only compute tasks as Computing).
_WAIT = re.compile(r"(?i)(event|notify)[ _]?(wait|record)(_sqe)?")


def op_type(name: str) -> str:
    """The op type of an Ascend task name: ``aclnnMm_MatMulCommon_MatMulV2`` -> MatMulV2,
    ``trans_TransData_8`` -> TransData, ``hcom_allReduce__184_0_1`` -> hcom_allReduce, a
    graph node ``Conv2DBackpropFilter6`` -> Conv2DBackpropFilter (the node's index
    dropped), anything else as it is."""
    if name.startswith("hcom_"):
        return "hcom_" + name[5:].split("_", 1)[0]
    if name.startswith("aclnn") and "_" in name:
        return name.rsplit("_", 1)[-1] or name
    if name.startswith("trans_"):
        parts = name.split("_")
        return parts[1] if len(parts) > 1 and parts[1] else name
    base = re.sub(r"_\d+$", "", name)
    m = _NODE_INDEX.fullmatch(base)
    return m.group(1) if m and not base.endswith(("V1", "V2", "V3", "V4", "V5")) else base


def core_of(task_type: str, name: str) -> str:
    """The accelerator core of a task from its task type (as the file wrote it) and name."""
    task_type = task_type.strip()
    if name.startswith("hcom_") or task_type.upper() in COMM_TYPES:
        return "HCCL"
    if task_type.upper() in CORES:
        return task_type.upper()
    if "AiCpu" in name or "AICPU" in name:
        return "AI_CPU"
    if "AiCore" in name:
        return "AI_CORE"
    return task_type or "OTHER"


def is_wait(name: str, task_type: str) -> bool:
    """An event or notify wait or record (``EVENT_WAIT``, ``Notify_Wait``, ``NOTIFY_RECORD_SQE``)."""
    return bool(_WAIT.fullmatch(name) or _WAIT.fullmatch(task_type))
