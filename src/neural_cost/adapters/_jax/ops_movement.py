"""Table entries for JAX's data movement: slices, concatenation, splits, pads, tiling,
reversal, transposes, broadcasts and reshapes, and the free ``squeeze``. Matrix products,
convolutions, pooling and indexed reads and writes have their own family modules
(``ops_matmul``, ``ops_conv``, ``ops_norms``, ``ops_indexing``), as in the PyTorch table.

Each builder translates one equation's shapes and params into ``copy`` records, the
arithmetic staying in ``neural_cost.costs``. A builder that returns an empty list says "this
equation is free": the size-dependent cases (a reshape, a broadcast that adds only unit dims,
an identity slice...) cannot be plain ``Free`` entries, which never see params, so their
reasons live in ``FREE_WHEN_EMPTY_REASONS`` for the walker to cite.
"""

from __future__ import annotations

import math
from typing import Any

from .common import Ops, _ints, _same_shape
from .table import EMPTY_REASONS, LowerContext, free, lowers

#: Why an equation whose builder returned [] is free, by primitive name.
FREE_WHEN_EMPTY_REASONS: dict[str, str] = {
    "reshape": "a reshape without a dimension permutation relabels a contiguous value's dims (no data moves)",
    "broadcast_in_dim": "adds only size-1 dims: the output has the input's elements in the same order",
    "transpose": "moves only size-1 dims: the elements keep their order",
    "slice": "keeps the whole operand: XLA forwards it",
    "pad": "pads nothing: XLA forwards the operand",
    "tile": "one repetition per dim: XLA forwards the operand",
    "rev": "reverses no dim longer than 1: XLA forwards the operand",
}
EMPTY_REASONS.update(FREE_WHEN_EMPTY_REASONS)

free("removes size-1 dims of a contiguous value (no data moves)", "squeeze")


# --- slices: read only what they keep ---------------------------------------------------


@lowers("slice")
def _slice(eqn: Any, ctx: LowerContext) -> Ops:
    """``copy`` that reads only the kept elements; the whole operand is free (forwarded)."""
    if _same_shape(eqn, ctx):
        return []
    return [ctx.op(eqn, "copy", attrs={"reads": "touched"})]


# --- copies: concatenation, padding, tiling, reversal, transposes, broadcasts -----------


@lowers("concatenate", "stack")
def _copy_all_inputs(eqn: Any, ctx: LowerContext) -> Ops:
    """``copy``: every input read once, the output written once. (The ``copy`` primitive
    itself is registered with the casts in ops_pointwise, with the same mapping.)"""
    return [ctx.op(eqn, "copy")]


@lowers("split", "unstack")
def _copy_to_many(eqn: Any, ctx: LowerContext) -> Ops:
    """``copy`` with one output per piece: the operand read once, every piece written."""
    return [ctx.op(eqn, "copy", extra_outputs=eqn.outvars[1:])]


def _kept(size: int, low: int, interior: int, out: int) -> int:
    """Operand elements of one dim that survive a pad (negative low/high crop them)."""
    step = interior + 1
    first = max(0, -(low // step) if low < 0 else 0)
    last = min(size - 1, (out - 1 - low) // step) if out > 0 else -1
    return max(0, last - first + 1)


@lowers("pad")
def _pad(eqn: Any, ctx: LowerContext) -> Ops:
    """(operand, padding value) → ``copy``. A zero padding_config is free. Negative low/high
    crop the operand: the record then carries the cropped shape, the elements actually read."""
    operand, value = eqn.invars
    config = [(int(low), int(high), int(interior)) for low, high, interior in eqn.params["padding_config"]]
    if all(c == (0, 0, 0) for c in config):
        return []
    shape = ctx.shape(operand)
    if any(low < 0 or high < 0 for low, high, _ in config):
        out = ctx.shape(eqn.outvars[0])
        read = tuple(_kept(shape[d], low, interior, out[d]) for d, (low, _, interior) in enumerate(config))
        return [ctx.op(eqn, "copy", input_shapes=(read, ctx.shape(value)))]
    return [ctx.op(eqn, "copy")]


@lowers("tile")
def _tile(eqn: Any, ctx: LowerContext) -> Ops:
    if all(int(r) == 1 for r in eqn.params["reps"]):
        return []
    return [ctx.op(eqn, "copy")]


@lowers("rev")
def _rev(eqn: Any, ctx: LowerContext) -> Ops:
    shape = ctx.shape(eqn.invars[0])
    if all(shape[int(d)] <= 1 for d in eqn.params["dimensions"]):
        return []
    return [ctx.op(eqn, "copy")]


@lowers("transpose")
def _transpose(eqn: Any, ctx: LowerContext) -> Ops:
    """A materialised permutation: ``copy``, unless only size-1 dims move (free)."""
    shape = ctx.shape(eqn.invars[0])
    moved = [d for d in _ints(eqn.params["permutation"]) if shape[d] != 1]
    if moved == sorted(moved):
        return []
    return [ctx.op(eqn, "copy")]


@lowers("broadcast_in_dim")
def _broadcast_in_dim(eqn: Any, ctx: LowerContext) -> Ops:
    """Free when it only adds size-1 dims (as many elements out as in); a broadcast that grows
    the array materialises it: ``copy``. (Extra operands are dynamic shapes, not data.)"""
    operand = eqn.invars[0]
    if math.prod(ctx.shape(operand)) == math.prod(ctx.shape(eqn.outvars[0])):
        return []
    return [ctx.op(eqn, "copy", [operand])]


@lowers("reshape")
def _reshape(eqn: Any, ctx: LowerContext) -> Ops:
    """Free (a contiguous value relabelled), unless ``dimensions`` permutes it first: that is
    a transpose and then a reshape, a ``copy``."""
    operand = eqn.invars[0]
    dimensions = eqn.params.get("dimensions")
    if dimensions is None or _ints(dimensions) == tuple(range(len(ctx.shape(operand)))):
        return []
    return [ctx.op(eqn, "copy", [operand])]


# --- host callbacks -----------------------------------------------------------------------


@lowers("pure_callback", "io_callback", "debug_callback", "debug_print")
def _callback(eqn: Any, ctx: LowerContext) -> Ops:
    """``callback``: the operands sent to the host and the results brought back are counted as
    bytes; what the Python function computes is unknown, and the record's note says so."""
    function = getattr(eqn.params.get("callback"), "callback_func", None)
    target = getattr(function, "__qualname__", None)
    attrs = {"target": target} if isinstance(target, str) else {}
    outputs = eqn.outvars
    if not outputs:
        # no results: an empty output (the object stands in for the result atom, never read)
        return [ctx.op(eqn, "callback", output=object(), output_shape=(0,), dtype="uint8", attrs=attrs)]
    return [ctx.op(eqn, "callback", output=outputs[0], extra_outputs=outputs[1:], attrs=attrs)]
