"""Shapes and names as records hold them: checked once, when a record is made."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .errors import RecordError, ShapeError

Shape = tuple[int, ...]


def as_shape(value: Any, where: str) -> Shape:
    """A shape as a tuple of non-negative ints, or a ShapeError naming ``where``."""
    if isinstance(value, tuple) and all(type(d) is int and d >= 0 for d in value):
        return value  # fast path: already canonical
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ShapeError(f"{where}={value!r} is not a shape; give a tuple of non-negative integers")
    dims = []
    for dim in value:
        if isinstance(dim, bool) or not hasattr(dim, "__index__"):
            raise ShapeError(
                f"{where}={tuple(value)!r} has a non-integer dimension {dim!r}; shapes must be non-negative integers"
            )
        size = int(dim.__index__())
        if size < 0:
            raise ShapeError(
                f"{where}={tuple(value)!r} has a negative dimension {size}; shapes must be non-negative integers"
            )
        dims.append(size)
    return tuple(dims)


def num_elements(shape: Shape) -> int:
    return math.prod(shape)


def check_name(value: Any, where: str, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not isinstance(value, str) or not value:
        raise RecordError(f"{where}={value!r} must be a non-empty string")
