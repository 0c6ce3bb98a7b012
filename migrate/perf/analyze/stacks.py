"""Where in the user's code a host op ran, and which framework op launched a device op.

Source lines come from what the profile recorded with ``with_stack=True``: the op's own
``Call stack`` argument (innermost frame first, as torch.profiler and torch_npu write it),
else the Python frames (``python_function`` events) enclosing the op on its thread. The
line given is the innermost frame of the user's code: frames of torch, torch_npu, the
standard library and the interpreter's built-ins are passed over, so a library's frame
(``transformers/models/llama/modeling_llama.py(310): forward``) counts as code the user
can change.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections import defaultdict

from migrate.perf.timeline import HostOp, Timeline

__all__ = ["Stacks", "is_user_frame", "location_of"]

_FRAME = re.compile(r"\s*(?P<path>[^()]+?)\((?P<line>\d+)\): ?(?P<func>.*)")
LIBRARY_ROOTS = frozenset({"torch", "torch_npu", "torchgen", "functorch", "triton", "migrate"})
MAX_WALK = 4096
# Host ops that are not framework ops: runtime and ACL calls, the task queue, step marks.
NOT_FRAMEWORK = (
    "cuda",
    "AscendCL@",
    "Enqueue",
    "Dequeue",
    "ProfilerStep#",
    "acl",
    "Runtime@",
    "HostToDevice",
)


def _innermost_aten(stack: list[tuple[float, float, int]], host, strings) -> int:
    """The innermost aten op of the open ops, else the innermost op."""
    for entry in reversed(stack):
        if strings[host["name"][entry[2]]].startswith("aten::"):
            return entry[2]
    return stack[-1][2]


def parse_frame(frame: str) -> tuple[str, int, str] | None:
    m = _FRAME.fullmatch(frame)
    if not m:
        return None
    return m.group("path").strip(), int(m.group("line")), m.group("func").strip()


def is_user_frame(frame: str) -> bool:
    got = parse_frame(frame)
    if got is None:
        return False
    path = got[0].replace("\\", "/")
    if path.startswith("<"):
        return False
    parts = [p for p in path.split("/") if p]
    roots = {p for p in parts if p in LIBRARY_ROOTS}
    if roots and "site-packages" not in parts[: parts.index(next(iter(roots)))]:
        return False
    if "site-packages" in parts:
        after = parts[parts.index("site-packages") + 1 :]
        return bool(after) and after[0] not in LIBRARY_ROOTS
    top = parts[0].removesuffix(".py") if parts else ""
    return top not in sys.stdlib_module_names


def location_of(frame: str) -> str | None:
    got = parse_frame(frame)
    return f"{got[0]}:{got[1]}" if got else None


class Stacks:
    def __init__(self, tl: Timeline) -> None:
        self.tl = tl
        frames = tl.frames
        by_tid: dict[int, list[int]] = defaultdict(list)
        for i in range(len(frames)):
            by_tid[frames.cols["tid"][i]].append(i)
        self.frames_by_tid = {
            tid: sorted(idx, key=lambda i: frames.cols["start"][i]) for tid, idx in by_tid.items()
        }
        self.frame_starts = {
            tid: [frames.cols["start"][i] for i in idx] for tid, idx in self.frames_by_tid.items()
        }

    def location(self, op: HostOp) -> str | None:
        if op.stack:
            for frame in op.stack.split(";"):
                if is_user_frame(frame):
                    return location_of(frame)
            return None
        return self._enclosing(op.tid, op.start)

    def _enclosing(self, tid: int, t: float) -> str | None:
        idx = self.frames_by_tid.get(tid)
        if not idx:
            return None
        cols, strings = self.tl.frames.cols, self.tl.strings
        k = bisect.bisect_right(self.frame_starts[tid], t) - 1
        walked = 0
        while k >= 0 and walked < MAX_WALK:
            i = idx[k]
            if cols["start"][i] + cols["dur"][i] >= t:
                name = strings[cols["name"][i]]
                if is_user_frame(name):
                    return location_of(name)
            k -= 1
            walked += 1
        return None

    def launchers(self, tl: Timeline) -> dict[int, int]:
        """device op index -> index of the innermost framework op (on the launching thread)
        whose time holds the op's launch; a sweep over both, sorted by time."""
        host, dev = tl.host_ops.cols, tl.device_ops.cols
        strings = tl.strings
        ops_by_tid: dict[int, list[tuple[float, float, int]]] = defaultdict(list)
        for i in range(len(tl.host_ops)):
            if not strings[host["name"][i]].startswith(NOT_FRAMEWORK):
                ops_by_tid[host["tid"][i]].append((host["start"][i], host["start"][i] + host["dur"][i], i))
        queries: dict[int, list[tuple[float, int]]] = defaultdict(list)
        for d in range(len(tl.device_ops)):
            launch = tl.launches.get(dev["launch"][d])
            if launch is not None:
                queries[launch[0]].append((launch[1], d))
        out: dict[int, int] = {}
        for tid, qs in queries.items():
            ops = sorted(ops_by_tid.get(tid, ()), key=lambda o: (o[0], -o[1]))
            stack: list[tuple[float, float, int]] = []
            k = 0
            for t, d in sorted(qs):
                while k < len(ops) and ops[k][0] <= t:
                    while stack and stack[-1][1] < ops[k][0]:
                        stack.pop()
                    stack.append(ops[k])
                    k += 1
                while stack and stack[-1][1] < t:
                    stack.pop()
                if stack:
                    out[d] = _innermost_aten(stack, host, strings)
        return out
