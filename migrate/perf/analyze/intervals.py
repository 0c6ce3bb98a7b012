"""Interval arithmetic for step breakdowns: unions, their length, and what one union
leaves of another. Intervals are (start, end) pairs; every function sorts its input."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["covered", "length", "minus_length", "union"]

Interval = tuple[float, float]


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """The disjoint, sorted union of ``intervals`` (empty and inverted ones dropped)."""
    out: list[list[float]] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1][1] = end
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def length(disjoint: Iterable[Interval]) -> float:
    return sum(b - a for a, b in disjoint)


def covered(disjoint_a: list[Interval], disjoint_b: list[Interval]) -> float:
    """Length of the intersection of two disjoint sorted unions."""
    i = j = 0
    total = 0.0
    while i < len(disjoint_a) and j < len(disjoint_b):
        a0, a1 = disjoint_a[i]
        b0, b1 = disjoint_b[j]
        lo, hi = max(a0, b0), min(a1, b1)
        if hi > lo:
            total += hi - lo
        if a1 < b1:
            i += 1
        else:
            j += 1
    return total


def minus_length(disjoint_a: list[Interval], disjoint_b: list[Interval]) -> float:
    """Length of A not covered by B."""
    return length(disjoint_a) - covered(disjoint_a, disjoint_b)


def clip(disjoint: list[Interval], start: float, end: float) -> list[Interval]:
    """The parts of ``disjoint`` inside [start, end]."""
    return [(max(a, start), min(b, end)) for a, b in disjoint if b > start and a < end]
