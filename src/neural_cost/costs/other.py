"""Sorting, random number generation, and caller-described custom work."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..core.dtypes import canonical_dtype, dtype_info
from ..core.errors import RecordError, ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation
from .registry import axis_attr, cost_rule, default_cost, expect_inputs, expect_output, read_inputs, rows_of, where


def sort_comparisons(length: int) -> int:
    """⌈L·log2 L⌉ comparisons for one row of L keys (0 for L < 2)."""
    if length < 2:
        return 0
    exact = length * math.log2(length)
    rounded = round(exact)
    return rounded if abs(exact - rounded) < 1e-9 else math.ceil(exact)


@cost_rule("sort", "per row of L keys along attrs['axis']: ⌈L·log2 L⌉ comparisons, counted as FLOPs of the key dtype")
def sort(op: Operation) -> OpCost:
    """A comparison sort's count, stated as comparisons: the work of the sort network or
    merge passes a backend runs differs by a constant factor. Extra operands sorted along
    (values, indices) are read and written but add no comparisons."""
    expect_inputs(op, 1, 8, "keys[, operands sorted along]")
    keys = op.inputs[0]
    for i, shape in enumerate(op.inputs[1:], start=1):
        if shape != keys:
            raise ShapeError(f"{where(op)}: inputs[{i}] {shape} must have the keys' shape {keys}")
    expect_output(op, keys, "a sort keeps the keys' shape")
    if not keys:
        raise ShapeError(f"{where(op)} needs keys of rank >= 1")
    rows, length = rows_of(keys, axis_attr(op, len(keys)))
    return default_cost(op, rows * sort_comparisons(length))


# Integer operations per block of random bits, derived from each generator's round function.
RNG_GENERATORS: dict[str, tuple[int, int, str]] = {
    # name: (bits per block, integer ops per block, derivation)
    "threefry2x32": (
        64,
        115,
        "20 rounds × (add, rotate as shl+shr+or, xor) = 100, + 5 key injections × 3 adds = 15",
    ),
    "philox4x32-10": (
        128,
        100,
        "10 rounds × (2 mul-hi + 2 mul-lo, 4 xors, 2 key-bump adds) = 100",
    ),
}
DEFAULT_GENERATOR = "philox4x32-10"


@cost_rule(
    "rng",
    "random bits generated = output elements × bits (attrs['bits_per_element'], default the dtype's width); "
    "integer ops per generator block (threefry2x32: 115 per 64 bits; philox4x32-10: 100 per 128 bits)",
)
def rng(op: Operation) -> OpCost:
    generator = op.attrs.get("generator")
    notes: tuple[str, ...] = ()
    if generator is None:
        generator = DEFAULT_GENERATOR
        notes = (f"generator not named; counted as {DEFAULT_GENERATOR}",)
    if generator not in RNG_GENERATORS:
        raise RecordError(
            f"{where(op)} attrs['generator']={generator!r} is unknown; use one of {', '.join(RNG_GENERATORS)}"
        )
    bits_per_element = op.attrs.get("bits_per_element", dtype_info(op.dtype).bits)
    if isinstance(bits_per_element, bool) or not isinstance(bits_per_element, int) or bits_per_element < 1:
        raise RecordError(f"{where(op)} attrs['bits_per_element']={bits_per_element!r} must be a positive integer")
    block_bits, ops_per_block, _ = RNG_GENERATORS[generator]
    bits = math.prod(op.output) * bits_per_element
    blocks = -(-bits // block_bits)
    ops = blocks * ops_per_block
    return OpCost({"uint32": ops} if ops else {}, read_inputs(op), op.output_bytes, notes=notes)


def _count(op: Operation, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordError(f"{where(op)} attrs[{name!r}]={value!r} must be a non-negative integer")
    return value


@cost_rule(
    "custom",
    "caller-supplied attrs['flops'] (an int, or a mapping dtype → int) and optional read_bytes/write_bytes "
    "(default: inputs read once, output written once)",
)
def custom(op: Operation) -> OpCost:
    if "flops" not in op.attrs:
        raise RecordError(f"{where(op)} needs attrs['flops']: the FLOPs of one execution (int or dtype → int)")
    value = op.attrs["flops"]
    if isinstance(value, Mapping):
        flops: dict[str, int] = {}
        spelled: dict[str, str] = {}
        for d, n in value.items():
            dtype = canonical_dtype(d, f"{where(op)} attrs['flops'] key")
            if dtype in flops:  # "fp16" and "float16": keeping either value would drop the other's FLOPs
                raise RecordError(
                    f"{where(op)} attrs['flops'] names {dtype} twice ({spelled[dtype]!r} and {d!r}); "
                    f"give one count per dtype"
                )
            flops[dtype] = _count(op, f"flops[{d!r}]", n)
            spelled[dtype] = d
    else:
        flops = {op.compute_dtype: _count(op, "flops", value)}
    flops = {d: n for d, n in flops.items() if n}
    read = op.attrs.get("read_bytes")
    write = op.attrs.get("write_bytes")
    dense = op.attrs.get("dense_flops")
    return OpCost(
        flops,
        read_inputs(op) if read is None else _count(op, "read_bytes", read),
        op.output_bytes if write is None else _count(op, "write_bytes", write),
        dense_flops=None if dense is None else _count(op, "dense_flops", dense),
        transcendentals=_count(op, "transcendentals", op.attrs.get("transcendentals", 0)),
    )
