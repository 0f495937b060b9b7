"""Table entries for JAX's convolutions: ``conv_general_dilated``, forward and as the gradients
JAX writes with it (transposed convolutions, input and weight gradients).

Each builder translates one equation into a ``conv`` record, permuting JAX's layouts
(``dimension_numbers``) into the canonical ones the rule expects; the arithmetic stays in
``neural_cost.costs``. Window reductions (pooling) are in ``ops_norms``, as in the PyTorch table.
"""

from __future__ import annotations

from typing import Any

from .common import Ops, _ints, _permute
from .table import LowerContext, lowers

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
