"""Table entries for JAX's contractions, convolutions, window reductions and data movement
(gather/scatter, slices, pads, concatenation, transposes, broadcasts); fused attention is in
``ops_attention``.

Each builder translates one equation's shapes and params into records of an existing kind,
permuting JAX's layouts into the canonical ones the rules expect; the arithmetic stays in
``neural_cost.costs``. A builder that returns an empty list says "this equation is free":
the size-dependent cases (a reshape, a broadcast that adds only unit dims, an identity
slice...) cannot be plain ``Free`` entries, which never see params, so their reasons live in
``FREE_WHEN_EMPTY_REASONS`` for the walker to cite.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from ...core.records import Operation, Shape
from .table import LowerContext, free, lowers

#: Why an equation whose builder returned [] is free, by primitive name.
FREE_WHEN_EMPTY_REASONS: dict[str, str] = {
    "reshape": "a reshape without a dimension permutation relabels a contiguous value's dims (no data moves)",
    "broadcast_in_dim": "adds only size-1 dims: the output has the input's elements in the same order",
    "transpose": "moves only size-1 dims: the elements keep their order",
    "slice": "keeps the whole operand: XLA forwards it",
    "dynamic_slice": "the slice is the whole operand (its start indices clamp to 0): XLA forwards it",
    "pad": "pads nothing: XLA forwards the operand",
    "tile": "one repetition per dim: XLA forwards the operand",
    "rev": "reverses no dim longer than 1: XLA forwards the operand",
}

free("removes size-1 dims of a contiguous value (no data moves)", "squeeze")

Ops = list[Operation]


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _permute(shape: Shape, order: Sequence[int]) -> Shape:
    return tuple(shape[d] for d in order)


def _with_index_dtypes(op: Operation, dtypes: Sequence[str]) -> Operation:
    """Keep every input's dtype on a record with index inputs.

    ``LowerContext.op`` drops ``input_dtypes`` when they all equal the output's (an int32
    gather from an int32 table); the movement rules would then take the indices as int64.
    """
    if op.input_dtypes is not None:
        return op
    return dataclasses.replace(op, input_dtypes=tuple(dtypes))


# --- contractions -----------------------------------------------------------------------


@lowers("dot_general")
def _dot_general(eqn: Any, ctx: LowerContext) -> Ops:
    """``matmul`` with lax.dot_general's dimension_numbers. ``preferred_element_type`` sets
    the output dtype; the FLOPs are charged to the inputs' dtype (bf16 × bf16 accumulating in
    f32 is bf16 work). Inputs of two types (int8 × bf16) are converted to the output type
    before the product, as JAX lowers them on CPU and GPU, so that type is charged; two fp8
    types multiply as they are (TPUs keep some other mixed pairs too: not modeled)."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = eqn.params["dimension_numbers"]
    dims = ((_ints(lhs_contract), _ints(rhs_contract)), (_ints(lhs_batch), _ints(rhs_batch)))
    attrs: dict[str, Any] = {"dimension_numbers": dims}
    lhs_dtype, rhs_dtype = ctx.dtype(eqn.invars[0]), ctx.dtype(eqn.invars[1])
    if lhs_dtype != rhs_dtype and not (lhs_dtype.startswith("float8") and rhs_dtype.startswith("float8")):
        attrs["compute_dtype"] = ctx.dtype(eqn.outvars[0])
    return [ctx.op(eqn, "matmul", list(eqn.invars[:2]), attrs=attrs)]


# --- convolution ------------------------------------------------------------------------


def _conv_specs(params: Any, rank: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(lhs_spec, rhs_spec, out_spec): lhs (batch, feature, *spatial) dims, rhs (out feature,
    in feature, *spatial), out (batch, feature, *spatial)."""
    numbers = params.get("dimension_numbers")
    if numbers is None:  # lax's default: NCHW, OIHW, NCHW
        identity = tuple(range(rank))
        return identity, identity, identity
    return _ints(numbers.lhs_spec), _ints(numbers.rhs_spec), _ints(numbers.out_spec)


@lowers("conv_general_dilated")
def _conv(eqn: Any, ctx: LowerContext) -> Ops:
    """``conv`` in the canonical layouts x (N, C, *spatial), weight (C_out, C_in/groups,
    *kernel), output (N, C_out, *spatial), whatever dimension_numbers said (NHWC/HWIO as Flax
    uses, NCHW/OIHW, or the transposed specs JAX writes for gradients). ``lhs_dilation`` (a
    transposed conv, the input gradient of a strided conv) and ``batch_group_count`` (the
    weight gradient of a grouped conv) pass through; padding stays (low, high) pairs, which
    may be negative."""
    params = eqn.params
    lhs, rhs = eqn.invars[:2]
    out = eqn.outvars[0]
    lhs_spec, rhs_spec, out_spec = _conv_specs(params, len(lhs.aval.shape))
    attrs: dict[str, Any] = {
        "stride": _ints(params["window_strides"]),
        "padding": tuple((int(low), int(high)) for low, high in params["padding"]),
        "dilation": _ints(params["rhs_dilation"]),
        "groups": int(params["feature_group_count"]),
    }
    lhs_dilation = _ints(params["lhs_dilation"])
    if any(d != 1 for d in lhs_dilation):
        attrs["lhs_dilation"] = lhs_dilation
    batch_groups = int(params["batch_group_count"])
    if batch_groups != 1:
        attrs["batch_groups"] = batch_groups
    return [
        ctx.op(
            eqn,
            "conv",
            [lhs, rhs],
            out,
            attrs=attrs,
            input_shapes=(_permute(ctx.shape(lhs), lhs_spec), _permute(ctx.shape(rhs), rhs_spec)),
            output_shape=_permute(ctx.shape(out), out_spec),
        )
    ]


# --- window reductions (pooling) and their gradients ------------------------------------


def _window_dims(params: Any, rank: int) -> tuple[list[int], list[int]]:
    """(leading dims, window dims): a dim whose window, stride, padding and dilations are all
    trivial is batch-like; the others are the pooled dims, both kept in order."""
    window = _ints(params["window_dimensions"])
    strides = _ints(params["window_strides"])
    padding = [(int(low), int(high)) for low, high in params["padding"]]
    base = _ints(params.get("base_dilation") or (1,) * rank)
    window_dilation = _ints(params.get("window_dilation") or (1,) * rank)
    lead: list[int] = []
    spatial: list[int] = []
    for d in range(rank):
        trivial = window[d] == 1 and strides[d] == 1 and padding[d] == (0, 0)
        (lead if trivial and base[d] == 1 and window_dilation[d] == 1 else spatial).append(d)
    if not spatial and lead:  # a 1×…×1 window: pool over the last dim with a window of 1 (no work)
        spatial = [lead.pop()]
    return lead, spatial


def _window_attrs(params: Any, spatial: Sequence[int]) -> dict[str, Any]:
    rank = len(params["window_dimensions"])
    attrs: dict[str, Any] = {
        "kernel": tuple(int(params["window_dimensions"][d]) for d in spatial),
        "stride": tuple(int(params["window_strides"][d]) for d in spatial),
        "padding": tuple((int(params["padding"][d][0]), int(params["padding"][d][1])) for d in spatial),
    }
    window_dilation = _ints(params.get("window_dilation") or (1,) * rank)
    if any(window_dilation[d] != 1 for d in spatial):
        attrs["dilation"] = tuple(window_dilation[d] for d in spatial)
    base = _ints(params.get("base_dilation") or (1,) * rank)
    if any(base[d] != 1 for d in spatial):
        attrs["lhs_dilation"] = tuple(base[d] for d in spatial)
    return attrs


def _pooled_layout(shape: Shape, lead: Sequence[int], spatial: Sequence[int]) -> Shape:
    """Leading dims then window dims; a leading 1 when every dim is windowed (the rule wants
    at least one batch-like dim)."""
    permuted = _permute(shape, [*lead, *spatial])
    return permuted if lead else (1, *permuted)


_POOLING_MODES = {"reduce_window_max": "max", "reduce_window_min": "min", "reduce_window_sum": "sum"}


@lowers(*_POOLING_MODES)
def _reduce_window(eqn: Any, ctx: LowerContext) -> Ops:
    """``pooling``: max/min count k-1 comparisons per output, a window sum k-1 adds (Flax's
    avg_pool is reduce_window_sum then a divide: k per output in all, the avg convention)."""
    (x,) = eqn.invars
    out = eqn.outvars[0]
    lead, spatial = _window_dims(eqn.params, len(x.aval.shape))
    attrs = {"mode": _POOLING_MODES[eqn.primitive.name], **_window_attrs(eqn.params, spatial)}
    return [
        ctx.op(
            eqn,
            "pooling",
            [x],
            out,
            attrs=attrs,
            input_shapes=(_pooled_layout(ctx.shape(x), lead, spatial),),
            output_shape=_pooled_layout(ctx.shape(out), lead, spatial),
        )
    ]


def _select_mode(params: Any) -> str:
    """select_prim ge/gt picks the window's max (max pooling), le/lt its min."""
    name = getattr(params["select_prim"], "name", str(params["select_prim"]))
    return "min" if name in ("le", "lt") else "max"


@lowers("select_and_scatter_add")
def _select_and_scatter_add(eqn: Any, ctx: LowerContext) -> Ops:
    """The gradient of max pooling, (source, operand) → operand's shape: ``pooling_backward``,
    which recomputes each window's winner from the operand (k-1 comparisons) and adds the
    source element there (1 add), reading both once and writing the whole output."""
    source, operand = eqn.invars
    out = eqn.outvars[0]
    lead, spatial = _window_dims(eqn.params, len(operand.aval.shape))
    attrs = {"mode": _select_mode(eqn.params), **_window_attrs(eqn.params, spatial)}
    return [
        ctx.op(
            eqn,
            "pooling_backward",
            [source, operand],
            out,
            attrs=attrs,
            input_shapes=(
                _pooled_layout(ctx.shape(source), lead, spatial),
                _pooled_layout(ctx.shape(operand), lead, spatial),
            ),
            output_shape=_pooled_layout(ctx.shape(out), lead, spatial),
        )
    ]


@lowers("select_and_gather_add")
def _select_and_gather_add(eqn: Any, ctx: LowerContext) -> Ops:
    """The forward-mode derivative of max pooling, (tangents, operand) → pooled shape: a
    ``pooling`` record comparing the operand's windows (k-1 per output) and reading the
    tangents alongside, the value at each winner taken from them."""
    tangents, operand = eqn.invars
    out = eqn.outvars[0]
    lead, spatial = _window_dims(eqn.params, len(operand.aval.shape))
    attrs = {"mode": _select_mode(eqn.params), **_window_attrs(eqn.params, spatial)}
    layout = _pooled_layout(ctx.shape(operand), lead, spatial)
    return [
        ctx.op(
            eqn,
            "pooling",
            [operand, tangents],
            out,
            attrs=attrs,
            input_shapes=(layout, layout),
            output_shape=_pooled_layout(ctx.shape(out), lead, spatial),
        )
    ]


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


@lowers(*_SCATTER_MODES)
def _scatter(eqn: Any, ctx: LowerContext) -> Ops:
    """``scatter`` in place: writes the touched elements; a combining scatter also reads the
    old touched values. The combiner in ``update_jaxpr`` is the scalar function applied per
    update (the rule counts one op per update): the walker must not count it as a sub-program.
    A plain ``scatter`` carrying an update_jaxpr is ``x.at[i].apply(f)``: it reads the old
    values and applies f to each, counted here like a combining scatter, f as one op."""
    operand, indices, updates = eqn.invars
    attrs: dict[str, Any] = {"mode": _SCATTER_MODES[eqn.primitive.name]}
    update_jaxpr = eqn.params.get("update_jaxpr")
    if attrs["mode"] == "update" and update_jaxpr is not None:
        body = getattr(update_jaxpr, "jaxpr", update_jaxpr)
        attrs = {"mode": "add", "applies": ",".join(e.primitive.name for e in body.eqns) or "identity"}
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


# --- slices: read only what they keep ---------------------------------------------------


def _same_shape(eqn: Any, ctx: LowerContext) -> bool:
    return ctx.shape(eqn.invars[0]) == ctx.shape(eqn.outvars[0])


@lowers("slice")
def _slice(eqn: Any, ctx: LowerContext) -> Ops:
    """``copy`` that reads only the kept elements; the whole operand is free (forwarded)."""
    if _same_shape(eqn, ctx):
        return []
    return [ctx.op(eqn, "copy", attrs={"reads": "touched"})]


@lowers("dynamic_slice")
def _dynamic_slice(eqn: Any, ctx: LowerContext) -> Ops:
    """(operand, *start indices): ``copy`` reading the slice and the indices, never the whole
    operand; a slice the operand's size is free (its start indices clamp to 0)."""
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
