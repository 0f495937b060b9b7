"""The small statistics the kernel model's fit uses: median, percentile, and a weighted
nondecreasing least-squares fit (pool adjacent violators)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def pava(values: Sequence[float], weights: Sequence[float]) -> list[float]:
    """Weighted least-squares nondecreasing fit (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [weighted sum, weight, members]
    for value, weight in zip(values, weights, strict=True):
        blocks.append([value * weight, weight, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, weight_sum, members = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += weight_sum
            blocks[-1][2] += members
    fitted: list[float] = []
    for total, weight_sum, members in blocks:
        fitted += [total / weight_sum] * int(members)
    return fitted


def relative_error(predicted: float, measured: float) -> float:
    """|predicted − measured| / measured."""
    return abs(predicted - measured) / measured
