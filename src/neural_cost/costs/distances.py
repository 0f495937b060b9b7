"""Pairwise distances (``cdist``).

Per pair of M-dimensional rows, by the norm's order p (``attrs['p']``):

- p = 2: M subtracts, M squares, M-1 adds, 1 sqrt = 3M FLOPs, 1 of them transcendental;
- p = 1: M subtracts, M absolute values, M-1 adds = 3M-1;
- p = ∞: M subtracts, M absolute values, M-1 maxima = 3M-1;
- p = 0 (the count of differing coordinates): M subtracts, M tests, M-1 adds = 3M-1;
- other p: M subtracts, M absolute values, M powers, M-1 adds, 1 power 1/p = 4M, M+1 of
  them transcendental.

This is the direct pairwise evaluation (PyTorch's ``_cdist_forward``). For p = 2 with more
than 25 rows PyTorch instead runs ``_euclidean_dist``, a matmul of the rows with their
squared norms appended, whose own ops are traced and counted as they run. The rows are
read once each (a kernel re-reads them per pair from cache) and the distances written once.
"""

from __future__ import annotations

import math
from typing import Literal

from ..core.errors import RecordError, ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation
from .registry import cost_rule, default_cost, expect_inputs, where


def pair_counts(p: float, width: int) -> tuple[int, int]:
    """(FLOPs, transcendentals) of one distance between two rows of ``width`` coordinates."""
    if width == 0:
        return 0, 0
    if p == 2:
        return 3 * width, 1
    if p in (0, 1, math.inf):
        return 3 * width - 1, 0
    return 4 * width, width + 1


@cost_rule(
    "cdist",
    "x1 (..., P, M), x2 (..., R, M) → (..., P, R): per pair p=2 3M (1 sqrt), p=1, p=0 and p=inf 3M-1, other "
    "p 4M (M+1 powers), by attrs['p'] (default 2; 'inf' for ∞)",
)
def cdist(op: Operation, *, p: float | Literal["inf"] = 2.0) -> OpCost:
    """Batch dims broadcast as PyTorch's ``cdist`` allows; the output states the pairs. An
    attribute holds finite numbers only, so p = ∞ is the string ``"inf"``."""
    expect_inputs(op, 2, 2, "x1 (..., P, M), x2 (..., R, M)")
    x1, x2 = op.inputs
    order = math.inf if p == "inf" else p  # no float(): an int p of any size compares exactly
    if order < 0:
        raise RecordError(f"{where(op)} attrs['p']={p!r} must be a number >= 0 (or inf)")
    if len(x1) < 2 or len(x2) < 2 or x1[-1] != x2[-1]:
        raise ShapeError(f"{where(op)}: x1 {x1} and x2 {x2} must be (..., P, M) and (..., R, M) with one M")
    out = op.output
    if len(out) < 2 or out[-2:] != (x1[-2], x2[-2]):
        raise ShapeError(f"{where(op)} output={out} must end in (P, R) = ({x1[-2]}, {x2[-2]})")
    pairs = math.prod(out)
    flops, transcendentals = pair_counts(order, x1[-1])
    return default_cost(op, pairs * flops, pairs * transcendentals)
