"""Decorator that registers one cost rule per operation kind, and helpers rules share.

A rule takes an ``Operation`` (shapes already plain tuples) and its attributes as typed
keyword-only parameters (``signature``), and returns an ``OpCost`` for one execution, or
raises ``ShapeError`` when the shapes do not fit the kind. Rules are plain arithmetic;
traffic defaults to "read every input once, write every output once".
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

from ..core.errors import RecordError, ShapeError
from ..core.kinds import OpCost, register_rule
from ..core.records import Operation, Shape
from .signature import AttrSpec
from .signature import Expect as Expect
from .signature import Min as Min
from .signature import NonNegative as NonNegative
from .signature import PerDim as PerDim
from .signature import Positive as Positive
from .signature import where as where

Rule = Callable[[Operation], OpCost]


def cost_rule(kind: str, summary: str) -> Callable[[Callable[..., OpCost]], Rule]:
    """Register ``rule`` as the cost rule of ``kind``; ``summary`` states its convention.

    The rule's keyword-only parameters are the attributes its kind takes (none: it takes
    only the common ``op`` and ``compute_dtype``). Records of the kind are checked against
    them when they are made, and the rule receives them as keywords, defaults filled in."""

    def decorate(rule: Callable[..., OpCost]) -> Rule:
        spec = AttrSpec.of(kind, rule)
        keywords = spec.keywords

        @functools.wraps(rule)
        def cost(op: Operation) -> OpCost:
            return rule(op, **keywords(op))

        register_rule(kind, cost, summary, spec.check)
        return cost

    return decorate


def expect_inputs(op: Operation, low: int, high: int | None = None, names: str = "") -> None:
    count = len(op.inputs)
    high = low if high is None else high
    if not low <= count <= high:
        wanted = str(low) if low == high else f"{low} to {high}"
        suffix = f" ({names})" if names else ""
        raise ShapeError(f"{where(op)} has {count} inputs; this kind takes {wanted}{suffix}")


def expect_output(op: Operation, expected: Shape, why: str) -> None:
    if op.output != expected:
        raise ShapeError(f"{where(op)} output={op.output} does not fit its inputs: expected {expected} ({why})")


def read_inputs(op: Operation) -> int:
    return sum(op.input_bytes(i) for i in range(len(op.inputs)))


def default_cost(op: Operation, flops: int, transcendentals: int = 0, dense_flops: int | None = None) -> OpCost:
    """Charge ``flops`` to the op's compute dtype; read every input once, write the outputs."""
    return OpCost(
        {op.compute_dtype: flops} if flops else {},
        read_inputs(op),
        op.output_bytes,
        dense_flops=dense_flops,
        transcendentals=transcendentals,
    )


def axis_index(op: Operation, axis: int, rank: int, name: str = "axis") -> int:
    """A typed axis attribute (``axis: int = -1``) checked against the input's rank, made non-negative."""
    if rank == 0:
        raise ShapeError(f"{where(op)} needs an input of rank >= 1 to take attrs[{name!r}]")
    if not -rank <= axis < rank:
        raise ShapeError(f"{where(op)} attrs[{name!r}]={axis} is out of range for rank {rank}")
    return axis % rank


def spatial(op: Operation, name: str, value: int | tuple[int, ...], ndim: int) -> tuple[int, ...]:
    """A typed per-dim attribute (one int for every spatial dim, or one per dim) as ``ndim`` ints."""
    if isinstance(value, int):
        return (value,) * ndim
    if len(value) != ndim:
        raise RecordError(
            f"{where(op)} attrs[{name!r}]={value!r} has {len(value)} values for {ndim} spatial dims; "
            f"give one int for all of them or one per dim"
        )
    return value


def broadcasts_to(shape: Shape, target: Shape) -> bool:
    """True when numpy broadcasting can expand ``shape`` to exactly ``target``."""
    if len(shape) > len(target):
        return False
    offset = len(target) - len(shape)
    return all(d == 1 or d == target[offset + i] for i, d in enumerate(shape))


def broadcast_shapes(op: Operation, shapes: Sequence[Shape]) -> Shape:
    rank = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(rank):
        sizes = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise ShapeError(
                f"{where(op)} inputs {tuple(shapes)} do not broadcast: sizes {sorted(sizes)} meet on one axis"
            )
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def rows_of(shape: Shape, axis: int) -> tuple[int, int]:
    """(number of rows, row length) when ``shape`` is split along ``axis``."""
    length = shape[axis]
    total = math.prod(shape)
    return (total // length if length else 0), length
