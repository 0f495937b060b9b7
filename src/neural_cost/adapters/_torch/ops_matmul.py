"""Table entries for PyTorch's matrix products: mm/bmm/mv/dot/matmul, addmm/baddbmm/addmv/
addbmm, linear, _scaled_mm and _grouped_mm.

Each builder turns one executed aten call into records of existing kinds, permuting
PyTorch's layouts into the ones the rules expect; the FLOP and byte arithmetic stays in
``neural_cost.costs``. Conventions beyond ARCHITECTURE.md, each stated where it is used:

- ``addmm``/``baddbmm``/``addmv``/``addbmm``: the product is a ``matmul`` record, exactly
  FlopCounterMode's count; ``beta·self + alpha·product`` is a separate ``elementwise``
  record ``<op>.bias``: 1 add, +1 multiply when beta ≠ 1, +1 when alpha ≠ 1 (none at all
  when beta = 0 and alpha = 1).
"""

from __future__ import annotations

from typing import Any

from ...core.records import Operation
from .common import Ops, Spec, _arguments, _bias_record, _is_tensor, _record, _spec
from .table import AtenCall, TorchContext, lowers

# --- matrix products --------------------------------------------------------------------


@lowers("mm", "bmm", "mv", "dot", "vdot", "matmul")
def _product(call: AtenCall, ctx: TorchContext) -> Ops:
    """``matmul`` with numpy semantics: mm (M,K)@(K,N), bmm (B,M,K)@(B,K,N), mv (M,K)@(K,),
    dot (K,)@(K,): 2·output elements·K, FlopCounterMode's mm/bmm count exactly (it has no
    formula for mv and dot: 0). The ``.dtype`` overloads write another output type; the
    FLOPs are charged to the inputs' type. (``matmul`` itself normally decomposes.)"""
    return [ctx.op(call, "matmul", [call.args[0], call.args[1]], call.out)]


def _scale_and_bias(call: AtenCall, ctx: TorchContext, product: Operation, bias: Any) -> Operation | None:
    """``beta·bias + alpha·product`` as its own elementwise record: 1 add, +1 multiply when
    beta ≠ 1, +1 when alpha ≠ 1. beta = 0 ignores the bias (PyTorch does not read it); with
    alpha = 1 too there is nothing left to do."""
    beta = call.kwargs.get("beta", 1)
    alpha = call.kwargs.get("alpha", 1)
    inputs: list[Spec] = [(product.output, product.dtype)]
    flops = 0 if alpha == 1 else 1
    if beta != 0:
        inputs.append(_spec(ctx, bias))
        flops += 1 if beta == 1 else 2
    if flops == 0:
        return None
    return _record(
        ctx,
        f"{call.name}.bias",
        "elementwise",
        inputs,
        _spec(ctx, call.out),
        attrs={"op": "add", "flops_per_element": flops},
    )


@lowers("addmm", "addmm_", "baddbmm", "baddbmm_", "addmv", "addmv_", "addbmm", "addbmm_")
def _product_plus(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, a, b, beta, alpha): the product as ``matmul`` — exactly FlopCounterMode's
    addmm/baddbmm count, which leaves the bias out — then ``<op>.bias``. addbmm sums the
    batch of products into one (M, N): a contraction over the batch and K together,
    2·M·N·B·K FLOPs (the batch sum is the accumulation)."""
    bias, a, b = call.args[:3]
    attrs = {"dimension_numbers": (((0, 2), (0, 1)), ((), ()))} if call.name.startswith("addbmm") else None
    product = ctx.op(call, "matmul", [a, b], call.out, attrs=attrs)
    scaled = _scale_and_bias(call, ctx, product, bias)
    return [product] if scaled is None else [product, scaled]


@lowers("linear")
def _linear(call: AtenCall, ctx: TorchContext) -> Ops:
    """(input, weight (N, K), bias): ``linear`` (normally linear decomposes to addmm before
    dispatch), the bias a separate record."""
    x, weight = call.args[:2]
    bias = call.arg(2, "bias")
    records = [ctx.op(call, "linear", [x, weight], call.out, attrs={"weight_layout": "out_in"})]
    if bias is not None:
        records.append(_bias_record(ctx, "linear.bias", call.out, bias, call.out.dim() - 1))
    return records


@lowers("_scaled_mm")
def _scaled_mm(call: AtenCall, ctx: TorchContext) -> Ops:
    """fp8 (a, b, scale_a, scale_b, bias, scale_result, out_dtype): ``matmul`` charged to the
    fp8 inputs (FlopCounterMode's count exactly), then the dequantisation as a ``dequantize``
    record reading the product, the scales (any blocking) and the bias."""
    a = _arguments(call)
    out = call.out
    product = ctx.op(call, "matmul", [a["self"], a["mat2"]], out)
    extras = [t for t in (a["scale_a"], a["scale_b"], a["bias"], a["scale_result"]) if _is_tensor(t)]
    scale = _record(
        ctx,
        "_scaled_mm.scale",
        "dequantize",
        [(product.output, product.dtype), *(_spec(ctx, t) for t in extras)],
        _spec(ctx, out),
    )
    return [product, scale]


@lowers("_grouped_mm")
def _grouped_mm(call: AtenCall, ctx: TorchContext) -> Ops:
    """(mat_a, mat_b, offs, bias, out_dtype): a ``grouped_matmul`` record (``transformers``' mixtures of experts
    call it with every token's rows sorted by expert), ``offs`` (G,) the groups' cumulative ends. By the
    operands' ranks (ATen's shape rule): (M, K) · (G, K, N) → (M, N), rows split among the groups; (G, M, K) ·
    (K, N) → (M, N), columns split; (M, K) · (K, N) → (G, M, N), the contracted dim split; (G, M, K) ·
    (G, K, N) → (G, M, N), a batched product. (PyTorch 2.13 refuses a bias: "not supported yet".)"""
    a = _arguments(call)
    lhs, rhs, offs = a["self"], a["mat2"], a.get("offs")
    two_d = (lhs.dim() == 2, rhs.dim() == 2)
    contract = ((1,), (1,)) if two_d == (True, False) else ((lhs.dim() - 1,), (rhs.dim() - 2,))
    layouts: dict[tuple[bool, bool], dict[str, Any]] = {
        (True, False): {"dimension_numbers": (contract, ((), ())), "group_dims": ((), (0,))},
        (False, True): {"dimension_numbers": (contract, ((), ())), "group_dims": ((0,), ())},
        (True, True): {"dimension_numbers": (contract, ((), ())), "group_dims": ((), ()), "ragged_contracting": True},
        (False, False): {"dimension_numbers": (contract, ((0,), (0,))), "group_dims": ((), ())},
    }
    attrs = layouts[two_d]
    inputs = [lhs, rhs] + ([offs] if _is_tensor(offs) else [])
    return [ctx.op(call, "grouped_matmul", inputs, call.out, attrs=attrs)]
