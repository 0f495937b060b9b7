"""Table entries for JAX's indexed reads and writes: ``gather``, the ``scatter`` family,
``dynamic_slice`` and ``dynamic_update_slice``.

Each builder translates one equation into a ``gather``, ``scatter`` or ``copy`` record; the
arithmetic stays in ``neural_cost.costs``. As ARCHITECTURE.md says, a gather reads the indices
and only the elements it touches, a scatter writes only the touched elements in place (a
combining scatter also reads their old values). A ``dynamic_slice`` the operand's size is free
(its reason is in ``FREE_WHEN_EMPTY_REASONS``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ...core.records import Operation
from .common import Ops, _same_shape
from .table import EMPTY_REASONS, LowerContext, lowers

#: Why an equation whose builder returned [] is free, by primitive name.
FREE_WHEN_EMPTY_REASONS: dict[str, str] = {
    "dynamic_slice": "the slice is the whole operand (its start indices clamp to 0): XLA forwards it",
}
EMPTY_REASONS.update(FREE_WHEN_EMPTY_REASONS)


def _with_index_dtypes(op: Operation, dtypes: Sequence[str]) -> Operation:
    """Keep every input's dtype on a record with index inputs.

    ``LowerContext.op`` drops ``input_dtypes`` when they all equal the output's (an int32
    gather from an int32 table); the movement rules would then take the indices as int64.
    """
    if op.input_dtypes is not None:
        return op
    return dataclasses.replace(op, input_dtypes=tuple(dtypes))


# --- gather and scatter -----------------------------------------------------------------


@lowers("gather")
def _gather(eqn: Any, ctx: LowerContext) -> Ops:
    """``gather``: reads the indices and one operand element per output element (a 3-row
    lookup from a 1,000,000-row table reads 3 rows), whatever the dimension numbers."""
    operand, indices = eqn.invars
    op = ctx.op(eqn, "gather", [operand, indices])
    return [_with_index_dtypes(op, (ctx.dtype(operand), ctx.dtype(indices)))]


_SCATTER_MODES = {
    "scatter": "update",
    "scatter-add": "add",
    "scatter-sub": "sub",
    "scatter-mul": "mul",
    "scatter-min": "min",
    "scatter-max": "max",
}


def _per_update(update_jaxpr: Any) -> tuple[int, int]:
    """(FLOPs, transcendentals) of one application of a scatter's scalar function: its
    equations walked as any program's are (sub-jaxprs, catalog entries) on its scalar operands.
    A function with an equation the table does not model is not guessed: the error makes the
    whole scatter unmodeled, named, with this reason in the trace's notes."""
    from .walker import Walker  # the walker imports the table this module fills

    state = Walker({}, 1).run(update_jaxpr)
    if state.unmodeled:
        names = ", ".join(sorted(state.unmodeled))
        raise ValueError(f"the function applied per element runs equations with no table entry: {names}")
    ops = state.operations
    return sum(op.cost.flops * op.count for op in ops), sum(op.cost.transcendentals * op.count for op in ops)


@lowers(*_SCATTER_MODES)
def _scatter(eqn: Any, ctx: LowerContext) -> Ops:
    """``scatter`` in place: writes the touched elements; a combining scatter also reads the
    old touched values. The combiner in ``update_jaxpr`` is the scalar function applied per
    update (the rule counts one op per update): the walker must not count it as a sub-program.
    A plain ``scatter`` carrying an update_jaxpr is ``x.at[i].apply(f)``: it reads the old
    values and applies f to each, counted like a combining scatter whose per-element count is
    f's own equations (``_per_update``)."""
    operand, indices, updates = eqn.invars
    attrs: dict[str, Any] = {"mode": _SCATTER_MODES[eqn.primitive.name]}
    update_jaxpr = eqn.params.get("update_jaxpr")
    if attrs["mode"] == "update" and update_jaxpr is not None:
        body = getattr(update_jaxpr, "jaxpr", update_jaxpr)
        flops, transcendentals = _per_update(update_jaxpr)
        attrs = {"mode": "add", "applies": ",".join(e.primitive.name for e in body.eqns) or "identity"}
        attrs["flops_per_update"] = flops
        if transcendentals:
            attrs["transcendentals_per_update"] = transcendentals
    op = ctx.op(eqn, "scatter", [operand, indices, updates], attrs=attrs)
    return [_with_index_dtypes(op, (ctx.dtype(operand), ctx.dtype(indices), ctx.dtype(updates)))]


@lowers("dynamic_update_slice")
def _dynamic_update_slice(eqn: Any, ctx: LowerContext) -> Ops:
    """(operand, update, *start indices) → ``scatter`` mode update, in place: writes only the
    update's elements, reads the update and the start indices (packed as one (k,) input)."""
    operand, update, *starts = eqn.invars
    index_dtype = ctx.dtype(starts[0]) if starts else "int32"
    dtypes = (ctx.dtype(operand), index_dtype, ctx.dtype(update))
    op = ctx.op(
        eqn,
        "scatter",
        [operand, update],
        attrs={"mode": "update"},
        input_shapes=(ctx.shape(operand), (len(starts),), ctx.shape(update)),
        input_dtypes=dtypes,
    )
    return [_with_index_dtypes(op, dtypes)]


@lowers("dynamic_slice")
def _dynamic_slice(eqn: Any, ctx: LowerContext) -> Ops:
    """(operand, *start indices): ``copy`` reading the slice and the indices, never the whole
    operand; a slice the operand's size is free (its start indices clamp to 0)."""
    if _same_shape(eqn, ctx):
        return []
    return [ctx.op(eqn, "copy", attrs={"reads": "touched"})]
