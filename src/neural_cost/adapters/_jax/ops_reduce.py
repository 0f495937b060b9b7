"""Table entries for JAX's reductions, arg-reductions, cumulative scans, sorts and top-k.

Each builder translates one equation into a ``reduce``, ``cumulative`` or ``sort`` record;
the arithmetic lives in ``neural_cost.costs``. The counting conventions these builders state:

- Reductions: n - 1 combining ops per output (``argmax``/``argmin``: comparisons charged to
  the operand's dtype; XLA's variadic reduce over (value, index) pairs does several ops per
  element). The generic ``reduce`` carries a jaxpr and is left to the walker.
- Cumulative scans: L - 1 combining steps per row; ``cumlogsumexp`` combines with JAX's
  logaddexp, 10 FLOPs (max, sub, isnan compare, add, neg, abs, exp, log1p, add, select)
  of which 2 are transcendental (exp, log1p).
- ``sort``: all operands sorted together, keys compared (a multi-key sort's tie-break
  comparisons are not counted); ``top_k``/``approx_top_k``: the sort rule's top-k form
  (``approx_top_k`` counted as an exact top-k of the same output size).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.records import Operation
from .table import LowerContext, lowers

# -- reductions and scans ----------------------------------------------------------------


def _axes(eqn: Any) -> tuple[int, ...]:
    return tuple(int(a) for a in eqn.params["axes"])


@lowers("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or", "reduce_xor")
def _reduce(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    return [ctx.op(eqn, "reduce", attrs={"op": eqn.primitive.name, "axes": _axes(eqn)})]


@lowers("argmax", "argmin")
def _arg_reduce(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    # The result is the index dtype; the comparisons are in the operand's.
    attrs = {"op": eqn.primitive.name, "axes": _axes(eqn), "compute_dtype": ctx.dtype(eqn.invars[0])}
    return [ctx.op(eqn, "reduce", attrs=attrs)]


@lowers("cumsum", "cumprod", "cummax", "cummin")
def _cumulative(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    return [ctx.op(eqn, "cumulative", attrs={"op": eqn.primitive.name, "axis": int(eqn.params["axis"])})]


@lowers("cumlogsumexp")
def _cumlogsumexp(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    attrs = {
        "op": "cumlogsumexp",
        "axis": int(eqn.params["axis"]),
        "flops_per_combine": 10,  # logaddexp: max, sub, isnan, add, neg, abs, exp, log1p, add, select
        "transcendentals_per_combine": 2,  # exp, log1p
    }
    return [ctx.op(eqn, "cumulative", attrs=attrs)]


# -- sorting -----------------------------------------------------------------------------


@lowers("sort")
def _sort(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    # Operands are sorted together (keys first); one result per operand.
    return [ctx.op(eqn, "sort", attrs={"axis": int(eqn.params["dimension"])}, extra_outputs=eqn.outvars[1:])]


@lowers("top_k")
def _top_k(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    # Results: the k values, then their int32 indices.
    attrs = {"axis": int(eqn.params.get("axis", -1)), "k": int(eqn.params["k"])}
    return [ctx.op(eqn, "sort", attrs=attrs, extra_outputs=eqn.outvars[1:])]


@lowers("approx_top_k")
def _approx_top_k(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    # Counted as an exact top-k. Without aggregate_to_topk the result keeps more than k
    # candidates along the axis: k is what the result holds.
    axis = int(eqn.params["reduction_dimension"]) % len(eqn.invars[0].aval.shape)
    kept = int(eqn.outvars[0].aval.shape[axis])
    return [ctx.op(eqn, "sort", attrs={"axis": axis, "k": kept}, extra_outputs=eqn.outvars[1:])]
