"""Table entries for TensorFlow's matrix products: ``MatMul``, ``BatchMatMul*`` and two-operand
``Einsum``.

Each builder turns one graph op into a ``matmul`` record; the arithmetic lives in
``neural_cost.costs``. What the builders decide (checked against graphs Keras 3 traces):

- ``MatMul`` is a ``matmul`` record with lax-style ``dimension_numbers`` (transpose_a/b say
  which dim is contracted). ``BatchMatMulV2/V3`` is numpy matmul with broadcast batch dims;
  adj_x/adj_y swap the last two dims of the recorded shape (same elements, same bytes).
- ``Einsum`` of two operands whose every letter is a batch letter (both inputs and the
  output), a contracted letter (both inputs, not the output) or a free letter (one input and
  the output) is a ``matmul`` with ``dimension_numbers``; its recorded output is in
  dot_general order (batch, lhs free, rhs free): the same elements as TensorFlow's, permuted.
  Any other equation (one or three operands, a letter summed out of one operand alone, a
  repeated letter, batch sizes that broadcast) raises ``UnmodeledOp``: the walker counts it
  as unmodeled, by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.records import Operation, Shape
from .common import UnmodeledOp
from .table import TfContext, attr, lowers

# -- contractions ---------------------------------------------------------------------------


@lowers("MatMul")
def _matmul(op: Any, ctx: TfContext) -> Sequence[Operation]:
    lhs_contract = 0 if attr(op, "transpose_a", False) else 1
    rhs_contract = 1 if attr(op, "transpose_b", False) else 0
    numbers = ((lhs_contract,), (rhs_contract,)), ((), ())
    return [ctx.op(op, "matmul", attrs={"dimension_numbers": numbers})]


def _swap_last(shape: Shape, swap: bool) -> Shape:
    return (*shape[:-2], shape[-1], shape[-2]) if swap and len(shape) >= 2 else shape


@lowers("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def _batch_matmul(op: Any, ctx: TfContext) -> Sequence[Operation]:
    lhs, rhs = (ctx.shape(t) for t in op.inputs[:2])
    shapes = (_swap_last(lhs, bool(attr(op, "adj_x", False))), _swap_last(rhs, bool(attr(op, "adj_y", False))))
    return [ctx.op(op, "matmul", input_shapes=shapes)]


def _expand_ellipsis(term: str, count: int, fresh: str) -> str:
    """``term`` with its "..." replaced by ``count`` fresh letters, aligned right as numpy broadcasts."""
    return term.replace("...", fresh[len(fresh) - count :] if count else "")


@lowers("Einsum")
def _einsum(op: Any, ctx: TfContext) -> Sequence[Operation]:
    equation = str(attr(op, "equation", "")).replace(" ", "")
    shapes = [ctx.shape(t) for t in op.inputs]
    if "->" not in equation or len(shapes) != 2:
        raise UnmodeledOp(f"Einsum {equation!r}: only two-operand equations with an explicit output are modeled")
    sources, target = equation.split("->")
    terms = sources.split(",")
    fresh = "".join(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in equation)
    ellipsis = [len(shape) - (len(term) - 3) if "..." in term else 0 for term, shape in zip(terms, shapes, strict=True)]
    lhs, rhs = (_expand_ellipsis(term, count, fresh) for term, count in zip(terms, ellipsis, strict=True))
    target = _expand_ellipsis(target, max(ellipsis), fresh)
    sizes: dict[str, int] = {}
    for term, shape in ((lhs, shapes[0]), (rhs, shapes[1])):
        if len(term) != len(shape) or len(set(term)) != len(term):
            raise UnmodeledOp(f"Einsum {equation!r}: a repeated letter or a rank mismatch (shapes {shapes})")
        for letter, size in zip(term, shape, strict=True):
            if sizes.setdefault(letter, size) != size:
                raise UnmodeledOp(f"Einsum {equation!r}: letter {letter!r} broadcasts ({sizes[letter]} vs {size})")
    batch = [c for c in lhs if c in rhs and c in target]
    contract = [c for c in lhs if c in rhs and c not in target]
    summed = [c for c in lhs + rhs if c not in target and not (c in lhs and c in rhs)]
    if summed or any(c not in lhs and c not in rhs for c in target):
        raise UnmodeledOp(f"Einsum {equation!r}: a letter is summed out of one operand alone or appears from nowhere")
    numbers = (
        (tuple(lhs.index(c) for c in contract), tuple(rhs.index(c) for c in contract)),
        (tuple(lhs.index(c) for c in batch), tuple(rhs.index(c) for c in batch)),
    )
    out = tuple(sizes[c] for c in batch + [c for c in lhs if c not in rhs] + [c for c in rhs if c not in lhs])
    return [ctx.op(op, "matmul", attrs={"dimension_numbers": numbers}, output_shape=out)]
