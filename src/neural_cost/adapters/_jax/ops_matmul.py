"""Table entries for JAX's matrix products: ``dot_general`` (what ``jnp.matmul``, ``jnp.dot``,
``jnp.einsum`` and Flax's ``Dense`` lower to).

Each builder translates one equation's shapes and params into a ``matmul`` record; the
arithmetic stays in ``neural_cost.costs``. The dtype convention (which type a mixed-precision
product is charged to) is stated in ``_dot_general``'s docstring.
"""

from __future__ import annotations

from typing import Any

from .common import Ops, _ints
from .table import LowerContext, lowers

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


@lowers("ragged_dot_general")
def _ragged_dot_general(eqn: Any, ctx: LowerContext) -> Ops:
    """``lax.ragged_dot`` (a mixture of experts' per-expert product) as a ``grouped_matmul`` record: lhs, rhs, group
    sizes. Its ragged lhs dim is free (the rhs's group dims index the groups), contracted (one output per group,
    a leading G), or a batch dim (a product per batch entry: no group dims). The FLOPs are the product's, as a
    grouped kernel runs it (``lax.ragged_dot``'s TPU and GPU lowerings): XLA:CPU lowers it to a dense product of
    every group over a masked copy, G times the work, which the compiled program's kernels count."""
    numbers = eqn.params["ragged_dot_dimension_numbers"]
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = numbers.dot_dimension_numbers
    dims = ((_ints(lhs_contract), _ints(rhs_contract)), (_ints(lhs_batch), _ints(rhs_batch)))
    ragged = set(_ints(numbers.lhs_ragged_dimensions))
    attrs: dict[str, Any] = {"dimension_numbers": dims, "group_dims": ((), _ints(numbers.rhs_group_dimensions))}
    if ragged & set(dims[0][0]):
        attrs["ragged_contracting"] = True
    lhs_dtype, rhs_dtype = ctx.dtype(eqn.invars[0]), ctx.dtype(eqn.invars[1])
    if lhs_dtype != rhs_dtype:
        attrs["compute_dtype"] = ctx.dtype(eqn.outvars[0])
    return [ctx.op(eqn, "grouped_matmul", list(eqn.invars[:3]), attrs=attrs)]
