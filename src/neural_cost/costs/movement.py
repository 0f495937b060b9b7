"""Data movement: embedding lookups, gather, scatter, and plain copies.

Index inputs take their dtype from ``input_dtypes``; without it they are assumed int64
(PyTorch's index type) — pass ``input_dtypes`` for int32 indices (JAX, TensorFlow).
"""

from __future__ import annotations

import math
from typing import Literal, get_args

from ..core.dtypes import dtype_info
from ..core.errors import ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation
from .registry import NonNegative, cost_rule, expect_inputs, expect_output, where

INDEX_DTYPE = "int64"


def _index_bytes(op: Operation, index: int) -> int:
    dtype = op.input_dtypes[index] if op.input_dtypes is not None else INDEX_DTYPE
    return dtype_info(dtype).nbytes(math.prod(op.inputs[index]))


def _element_bytes(op: Operation, index: int, elements: int) -> int:
    return dtype_info(op.input_dtype(index)).nbytes(elements)


@cost_rule("embedding", "table (V, D) rows looked up by indices (...): reads the touched rows and the indices")
def embedding(op: Operation) -> OpCost:
    expect_inputs(op, 2, 2, "table (V, D), indices")
    table, indices = op.inputs
    if len(table) != 2:
        raise ShapeError(f"{where(op)} needs a 2-D table (V, D), got {table}")
    expect_output(op, (*indices, table[1]), "the indices' shape then the embedding width")
    touched = math.prod(op.output)
    if touched and table[0] == 0:
        raise ShapeError(f"{where(op)} looks up rows of an empty table {table}")
    return OpCost({}, _element_bytes(op, 0, touched) + _index_bytes(op, 1), op.output_bytes)


@cost_rule("gather", "operand, indices: reads as many operand elements as the output has, plus the indices")
def gather(op: Operation) -> OpCost:
    """Reads only what it touches: one operand element per output element, never the whole
    operand (a repeated index is read again, as the hardware fetches it again)."""
    expect_inputs(op, 2, 2, "operand, indices")
    operand = op.inputs[0]
    touched = math.prod(op.output)
    if touched and math.prod(operand) == 0:
        raise ShapeError(f"{where(op)} gathers {touched} elements from an empty operand {operand}")
    return OpCost({}, _element_bytes(op, 0, touched) + _index_bytes(op, 1), op.output_bytes)


ScatterMode = Literal["update", "add", "sub", "mul", "min", "max"]
SCATTER_MODES: tuple[str, ...] = get_args(ScatterMode)


@cost_rule(
    "scatter",
    "operand, indices, updates, in place: writes the touched elements (as many as updates has, or "
    "attrs['touched'] when fewer updates are broadcast, e.g. one scalar); reads indices and updates; "
    "a combining scatter (add/sub/mul/min/max) also reads the old touched values and does one op per touched element",
)
def scatter(
    op: Operation,
    *,
    mode: ScatterMode = "update",
    touched: NonNegative | None = None,
    applies: str | None = None,
    flops_per_update: NonNegative | None = None,
    transcendentals_per_update: NonNegative = 0,
) -> OpCost:
    """``touched`` is for a scatter whose updates broadcast over the elements it writes
    (PyTorch's ``scatter`` with a scalar value, ``index_fill``, ``x[mask] = 0``): the updates
    are read once each, the touched elements written (and, combining, read) once.
    ``applies`` names the primitives a scatter's combining function applies (JAX's
    ``scatter`` with an update computation), kept for readers. A combining function that is
    more than one op (``x.at[i].apply(f)``) states its own count per touched element,
    ``flops_per_update`` (and ``transcendentals_per_update``), instead of ``mode``'s one op."""
    expect_inputs(op, 3, 3, "operand, indices, updates")
    operand, _indices, updates = op.inputs
    expect_output(op, operand, "a scatter updates its operand in place")
    given = math.prod(updates)
    if touched is None:
        touched = given
    elif touched < given:
        raise ShapeError(
            f"{where(op)} attrs['touched']={touched} is fewer than the {given} updates {updates}; "
            f"every update is written somewhere"
        )
    if touched and math.prod(operand) == 0:
        raise ShapeError(f"{where(op)} scatters {touched} updates into an empty operand {operand}")
    read = _index_bytes(op, 1) + _element_bytes(op, 2, given)
    combining = mode != "update"
    if combining:
        read += _element_bytes(op, 0, touched)
    write = dtype_info(op.dtype).nbytes(touched)
    flops = touched * (1 if flops_per_update is None else flops_per_update) if combining else 0
    transcendentals = touched * transcendentals_per_update if combining else 0
    return OpCost({op.compute_dtype: flops} if flops else {}, read, write, transcendentals=transcendentals)


CopyReads = Literal["all", "touched"]
COPY_READS: tuple[str, ...] = get_args(CopyReads)


@cost_rule(
    "copy",
    "pure data movement (casts, materialised transposes, concat, pad): reads inputs, writes output, 0 FLOPs; "
    "attrs['reads']='touched' (a slice): reads as many elements of inputs[0] as the outputs have, the rest in full",
)
def copy(op: Operation, *, reads: CopyReads = "all") -> OpCost:
    """A slice reads only the part it keeps: with ``reads='touched'`` the first input is
    charged one element per output element (extra outputs included), never its whole size;
    further inputs (a dynamic slice's start indices) are read in full."""
    expect_inputs(op, 1, 1 << 16, "one or more sources")
    if reads == "all":
        return OpCost({}, sum(op.input_bytes(i) for i in range(len(op.inputs))), op.output_bytes)
    touched = math.prod(op.output) + sum(math.prod(shape) for shape in op.extra_outputs)
    if touched > math.prod(op.inputs[0]):
        raise ShapeError(
            f"{where(op)} reads {touched} touched elements of inputs[0] {op.inputs[0]}, more than it has; "
            f"use reads='all' for an op whose output outgrows its source"
        )
    read = _element_bytes(op, 0, touched) + sum(op.input_bytes(i) for i in range(1, len(op.inputs)))
    return OpCost({}, read, op.output_bytes)
