"""Helpers shared by the JAX table's family modules: integer params, layout permutations,
and the shape test that makes a slice free."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.records import Operation, Shape
from .table import LowerContext

Ops = list[Operation]


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _permute(shape: Shape, order: Sequence[int]) -> Shape:
    return tuple(shape[d] for d in order)


def _same_shape(eqn: Any, ctx: LowerContext) -> bool:
    return ctx.shape(eqn.invars[0]) == ctx.shape(eqn.outvars[0])
