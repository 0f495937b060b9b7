"""Helpers shared by the TensorFlow table's family modules: the error a builder raises for a
form of its op it cannot describe, constant operands, and the layout and padding arithmetic
that convolutions, pooling and batch norm share.

SAME padding is TensorFlow's: total = max((out-1)·stride + dilation·(k-1) + 1 - in, 0), the
smaller half before (``_same_padding``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.errors import AdapterError
from ...core.records import Shape
from .table import attr, constant_value


class UnmodeledOp(AdapterError):
    """A builder met a form of its op it cannot describe; the walker counts it as unmodeled."""


def const_ints(tensor: Any) -> tuple[int, ...] | None:
    """A Const integer tensor as a flat tuple, or None when it is not a constant."""
    value = constant_value(tensor)
    if value is None:
        return None
    return tuple(int(v) for v in value.reshape(-1))


def _channels_last(op: Any) -> bool:
    return not str(attr(op, "data_format", "NHWC")).startswith("NC")


def _canonical(shape: Shape, channels_last: bool) -> Shape:
    return (shape[0], shape[-1], *shape[1:-1]) if channels_last else shape


def _spatial(values: Sequence[int], channels_last: bool, ndim: int) -> tuple[int, ...]:
    """The spatial entries of a per-dim attribute written in the op's layout."""
    values = list(values)
    if len(values) != ndim + 2:
        values = [1] * (ndim + 2)
    return tuple(values[1:-1] if channels_last else values[2:])


def _same_padding(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    out = -(-size // stride)
    total = max((out - 1) * stride + dilation * (kernel - 1) + 1 - size, 0)
    return total // 2, total - total // 2


def _paddings(
    op: Any, sizes: Shape, kernel: Shape, stride: Shape, dilation: Shape, channels_last: bool
) -> tuple[tuple[int, int], ...]:
    """(low, high) per spatial dim for SAME, VALID or EXPLICIT padding, sizes being the input's."""
    mode = str(attr(op, "padding", "VALID"))
    ndim = len(sizes)
    if mode == "VALID":
        return ((0, 0),) * ndim
    if mode == "SAME":
        return tuple(_same_padding(sizes[i], kernel[i], stride[i], dilation[i]) for i in range(ndim))
    if mode == "EXPLICIT":
        flat = list(attr(op, "explicit_paddings", []))
        pairs = [(int(flat[2 * i]), int(flat[2 * i + 1])) for i in range(len(flat) // 2)]
        return tuple(pairs[1:-1] if channels_last else pairs[2:])
    raise UnmodeledOp(f"{op.type} with padding {mode!r}")
