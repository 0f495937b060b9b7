"""Table entries for JAX's window reductions (pooling) and their gradients.

The PyTorch table keeps norms, softmax and pooling in one family, ``ops_norms``; JAX has no
norm or softmax primitives (``jax.nn.softmax`` and Flax's LayerNorm/BatchNorm are compositions
of reductions and elementwise primitives, each counted by its own entry), so here the
family holds only pooling: ``reduce_window_*`` and the max-pooling derivatives
``select_and_scatter_add`` and ``select_and_gather_add``. Each builder permutes the operand
into (leading dims, window dims) for the ``pooling`` rules; the arithmetic stays in
``neural_cost.costs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.records import Shape
from .common import Ops, _ints, _permute
from .table import LowerContext, lowers

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
