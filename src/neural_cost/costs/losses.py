"""Losses that read only what their targets pick: negative log-likelihood and its gradient.

(Pointwise losses are ``elementwise`` or ``reduce`` records: they read every element.)
"""

from __future__ import annotations

import math
from typing import Literal

from ..core.errors import ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation
from .registry import cost_rule, default_cost, expect_inputs, where

Reduction = Literal["none", "sum", "mean"]


@cost_rule(
    "nll_loss",
    "(picked log-probabilities (n,), targets (n elements)[, picked class weights (n,)]): per target an "
    "ignore_index test and a negate (+ a multiply by its weight); attrs['reduction'] sum + n-1 adds, mean "
    "+ n-1 (loss) + n-1 (weights) + 1 divide (default mean)",
)
def nll_loss(op: Operation, *, reduction: Reduction = "mean") -> OpCost:
    """The first input is the one log-probability each target picks (gathered), never the
    whole (N, C) input, and the weights likewise one per target: the kernel reads those.
    Output: the loss (a scalar, or per target with reduction 'none'), then the total weight."""
    expect_inputs(op, 2, 3, "picked (n,), targets[, picked weights (n,)]")
    targets = op.inputs[1]
    rows = math.prod(targets)
    for i, shape in enumerate(op.inputs):
        if i != 1 and math.prod(shape) != rows:
            raise ShapeError(f"{where(op)}: inputs[{i}] {shape} must hold one value per target ({rows})")
    if reduction != "none" and op.output != ():
        raise ShapeError(f"{where(op)} output={op.output} must be a scalar () with reduction={reduction!r}")
    if reduction == "none" and op.output != targets:
        raise ShapeError(f"{where(op)} output={op.output} must be the targets' shape {targets}: one loss per target")
    weighted = len(op.inputs) == 3
    flops = (2 + weighted) * rows
    if reduction == "sum":
        flops += max(rows - 1, 0)
    elif reduction == "mean":
        flops += 2 * max(rows - 1, 0) + 1
    return default_cost(op, flops)


@cost_rule(
    "nll_loss_backward",
    "(grad_output, targets[, class weights], total_weight) → the input's gradient (N, C, ...): zeroed and one "
    "value written per target: ignore_index test, negate, ·grad (+ ·weight, + ÷total_weight for a mean)",
)
def nll_loss_backward(op: Operation, *, reduction: Reduction = "mean") -> OpCost:
    """Counted per target; the zeroing of the rest of the gradient is the output's write.
    The output is the input's shape: the targets' with a class dim inserted at dim 1 (dim 0
    for a single sample)."""
    expect_inputs(op, 3, 4, "grad_output, targets[, weights], total_weight")
    targets = op.inputs[1]
    out = op.output
    expected = () if len(out) == 1 else out[:1] + out[2:]
    if not out or targets != expected:
        raise ShapeError(f"{where(op)}: targets {targets} must be the output {out} without its class dim")
    weighted = len(op.inputs) == 4
    mean = reduction == "mean"
    return default_cost(op, (3 + weighted + mean) * math.prod(targets))
