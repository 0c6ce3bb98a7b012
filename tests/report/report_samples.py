"""Sample inputs for the report tests: a small rule pack, a real-looking training project,
and the findings a scan would report on it (positions computed from the source text)."""

from __future__ import annotations

import textwrap

from migrate.core.findings import Finding, Fix, LineIndex

RULES_YAML = """\
rules:
  - code: MIG101
    name: torch-cuda-api
    kind: qualified-name
    category: auto
    impact: crash
    message: "`{name}` is CUDA-only; use `{target}`"
    fix_title: "Replace with `{target}`"
    imports: [import torch_npu]
    params:
      names:
        torch.cuda.synchronize: torch.npu.synchronize
        torch.cuda.set_device: torch.npu.set_device
    doc:
      what: |
        Flags calls of `torch.cuda` functions that have a `torch.npu` counterpart of the
        same name. Checks qualified names, so aliases are found too.
      why: |
        On an Ascend machine there is no CUDA runtime: `torch.cuda.synchronize()` raises.
      example: |
        torch.cuda.synchronize()
      fix_safety: |
        Safe: the NPU function takes the same arguments and means the same thing.
    examples:
      - before: |
          import torch
          torch.cuda.synchronize()
        after: |
          import torch
          import torch_npu
          torch.npu.synchronize()
      - noop: |
          import torch
          torch.npu.synchronize()
  - code: MIG120
    name: nccl-backend-string
    kind: context-string
    category: assisted
    impact: behaviour
    message: "process group backend `nccl` is not available on Ascend; use `hccl`"
    fix_title: "Replace `nccl` with `hccl`"
    params:
      match: '^nccl$'
      keywords: [backend]
      prefilter: [nccl]
    doc:
      what: Flags the string "nccl" passed as a distributed backend.
      why: HCCL is Ascend's collective library; NCCL does not exist there.
      example: |
        ```python
        dist.init_process_group(backend="nccl")
        ```
      fix_safety: |
        Unsafe: code that compares the backend name elsewhere may change behaviour.
  - code: MIG301
    name: cuda-extension-build
    kind: qualified-name
    category: manual
    impact: crash
    effort: {minutes: 240, per: file}
    message: "custom CUDA extension `{name}` must be ported to Ascend C by hand"
    params:
      names: {torch.utils.cpp_extension.CUDAExtension: null}
    doc:
      what: Flags builds of custom CUDA kernels (CUDAExtension, load_inline with CUDA).
      why: CUDA kernels do not run on NPUs; they need an Ascend C or torch rewrite.
      example: |
        from torch.utils.cpp_extension import CUDAExtension
      fix_safety: No fix.
    examples:
      - noop: |
          from torch.utils.cpp_extension import CppExtension
"""

TRAIN_PY = textwrap.dedent("""\
    import torch
    import torch.distributed as dist
    from torch.utils.cpp_extension import CUDAExtension


    def setup(rank: int) -> None:
        dist.init_process_group(backend="nccl", rank=rank, world_size=2)
        torch.cuda.set_device(rank)


    def step(model, batch):
        loss = model(batch.cuda()).sum()
        loss.backward()
        torch.cuda.synchronize()
        torch.cuda.synchronize()
        return loss


    ext = CUDAExtension("fused_adam", ["fused_adam.cu"])
    """)

UTIL_PY = textwrap.dedent('''\
    import torch


    def sync():
        """Wait until the device is idle."""
        torch.cuda.synchronize()
    ''')


def locate(text: str, needle: str, occurrence: int = 0) -> tuple[int, int, int, int]:
    """1-based (line, col, end_line, end_col) of the n-th occurrence of needle."""
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(needle, start + 1)
    index = LineIndex(text)
    line, col = index.position(start)
    end_line, end_col = index.position(start + len(needle))
    return line, col, end_line, end_col


def make_finding(
    text: str,
    path: str,
    rule: str,
    name: str,
    needle: str,
    message: str,
    category: str,
    fix: Fix | None,
    occurrence: int = 0,
    snippet: bool = True,
) -> Finding:
    line, col, end_line, end_col = locate(text, needle, occurrence)
    return Finding(
        rule=rule,
        name=name,
        path=path,
        line=line,
        column=col,
        end_line=end_line,
        end_column=end_col,
        message=message,
        category=category,
        fix=fix,
        snippet=LineIndex(text).line_text(line) if snippet else "",
        impact=IMPACTS[rule],
        symbol=needle.split("(")[0],
    )


IMPACTS = {"MIG101": "crash", "MIG120": "behaviour", "MIG301": "crash"}


def findings_for(train: str, util: str) -> list[Finding]:
    safe = Fix("safe", "Replace with `torch.npu.synchronize`")
    return [
        make_finding(
            train,
            "src/train.py",
            "MIG120",
            "nccl-backend-string",
            '"nccl"',
            "process group backend `nccl` is not available on Ascend; use `hccl`",
            "assisted",
            Fix("unsafe", "Replace `nccl` with `hccl`"),
        ),
        make_finding(
            train,
            "src/train.py",
            "MIG101",
            "torch-cuda-api",
            "torch.cuda.set_device",
            "`torch.cuda.set_device` is CUDA-only; use `torch.npu.set_device`",
            "auto",
            Fix("safe", "Replace with `torch.npu.set_device`"),
        ),
        make_finding(
            train,
            "src/train.py",
            "MIG101",
            "torch-cuda-api",
            "torch.cuda.synchronize",
            "`torch.cuda.synchronize` is CUDA-only; use `torch.npu.synchronize`",
            "auto",
            safe,
            occurrence=0,
        ),
        make_finding(
            train,
            "src/train.py",
            "MIG101",
            "torch-cuda-api",
            "torch.cuda.synchronize",
            "`torch.cuda.synchronize` is CUDA-only; use `torch.npu.synchronize`",
            "auto",
            safe,
            occurrence=1,
        ),
        make_finding(
            train,
            "src/train.py",
            "MIG301",
            "cuda-extension-build",
            'CUDAExtension("fused_adam", ["fused_adam.cu"])',
            "custom CUDA extension `CUDAExtension` must be ported to Ascend C by hand",
            "manual",
            None,
        ),
        # No snippet: renderers must read the line from root/path.
        make_finding(
            util,
            "src/util.py",
            "MIG101",
            "torch-cuda-api",
            "torch.cuda.synchronize",
            "`torch.cuda.synchronize` is CUDA-only; use `torch.npu.synchronize`",
            "auto",
            safe,
            snippet=False,
        ),
    ]
