"""Which of many character spans holds an offset, in O(log n) per question.

A file with thousands of annotated parameters, NPU-aware if-chains or guarded try blocks
has thousands of spans; asking each finding "which span holds you?" by scanning the list
made a scan quadratic. ``SpanIndex`` answers with the first-added span that holds the
offset (the order the matchers rely on), from a table of elementary segments built once.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Sequence
from typing import Generic, TypeVar

T = TypeVar("T")


class SpanIndex(Generic[T]):
    """Spans ``(start, end, value)`` (end exclusive); ``at(offset)`` is the value of the
    first span, in the given order, with ``start <= offset < end`` (None if none)."""

    def __init__(self, spans: Sequence[tuple[int, int, T]]):
        self._points: list[int] = []
        self._values: list[T | None] = []
        if not spans:
            return
        order = sorted(range(len(spans)), key=lambda i: spans[i][0])
        points = sorted({p for a, b, _ in spans if a < b for p in (a, b)})
        active: list[tuple[int, int]] = []  # (insertion index, end): the first added on top
        j = 0
        for p in points:
            while j < len(order) and spans[order[j]][0] <= p:
                i = order[j]
                if spans[i][0] < spans[i][1]:
                    heapq.heappush(active, (i, spans[i][1]))
                j += 1
            while active and active[0][1] <= p:
                heapq.heappop(active)
            self._points.append(p)
            self._values.append(spans[active[0][0]][2] if active else None)

    def at(self, offset: int) -> T | None:
        k = bisect.bisect_right(self._points, offset) - 1
        return self._values[k] if k >= 0 else None

    def __bool__(self) -> bool:
        return any(v is not None for v in self._values)
