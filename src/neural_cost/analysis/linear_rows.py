"""A PyTorch few-row product read by its rows (``hardware/rows_model.py``), not off its class's curve.

A ``thin_matmul`` or ``thin_matmul:few`` kernel that runs one 2-D product (a linear, ``mm``, ``addmm``) of at least
``MIN_ROWS`` rows is expected at the calibration's rows model — a fixed cost per weight element and one per row and
weight element, fitted over the PyTorch grid's linears — where the calibration's points fit one (``fitted``); else,
and for every other kernel (a one-row product runs as a matrix-vector one), its class's curve as before. A note says
how many kernels were read so.
"""

from __future__ import annotations

import math

from ..core.dtypes import dtype_info
from ..core.estimate import CostEstimate
from ..core.units import plural
from ..hardware.kernel_model import KernelCalibration
from ..hardware.rows_model import DTYPE, MIN_ROWS, RowsModel, fit_rows_model
from .kernel_classes import Part
from .kernels import KernelTime, Levels

#: The classes read by their rows where the calibration has a rows model.
THIN = frozenset({"thin_matmul", "thin_matmul:few"})


def fitted(calibration: KernelCalibration) -> RowsModel | None:
    """The rows model of a PyTorch calibration's linears, their weights past half its largest cache (its capacity
    times its instances) at their own cost an element; None for another framework or too few linears."""
    if calibration.framework != "torch":
        return None
    caches = Levels.of(calibration.hardware).caches
    largest = max((level.capacity_bytes * level.instances for level in caches), default=0)
    return fit_rows_model(calibration.points, largest // 2) if largest else None


def product_shape(estimate: CostEstimate, row: KernelTime) -> tuple[int, int, int, int] | None:
    """``(M, K, N, bytes an element)`` of the one 2-D product a kernel runs (its output M × N, its left operand's
    last dim K); None for a kernel of no record, of several contractions, of one that is not two matrices, or of
    another dtype than the grid's linears (``rows_model.DTYPE``: the model's rates are of that dtype)."""
    if row.index is None:
        return None
    costs = [estimate.by_operation[i] for i in estimate.kernels[row.index].operations]
    products = [cost for cost in costs if cost.kind in ("matmul", "linear")]
    if len(products) != 1:
        return None
    op = products[0].operation
    if op.dtype != DTYPE or len(op.output) != 2 or len(op.inputs) < 2 or any(len(s) != 2 for s in op.inputs[:2]):
        return None
    rows, width = op.output
    depth = op.inputs[0][1]
    return rows, depth, width, max(1, math.ceil(dtype_info(op.dtype).bits / 8))


def thin_seconds(model: RowsModel | None, estimate: CostEstimate, row: KernelTime, part: Part) -> float | None:
    """A part's expected seconds off the rows model: a ``THIN`` part of a kernel of one 2-D product of
    ``MIN_ROWS`` rows or more (as fitted: fewer run as a matrix-vector product), read once (``repeats``); else None
    (its curve)."""
    if model is None or part.kernel_class not in THIN or part.repeats != 1:
        return None
    shape = product_shape(estimate, row)
    return None if shape is None or shape[0] < MIN_ROWS else model.seconds(*shape)


def rows_note(kernels: int, model: RowsModel) -> str:
    """The note on the kernels read off the rows model."""
    return f"{plural(kernels, 'few-row products')} read by their rows, not a curve: {model.describe()}"
