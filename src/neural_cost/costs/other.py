"""Sorting, random number generation, bag lookups, epilogues and pad gradients, and
caller-described custom work."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Literal

from ..core.dtypes import canonical_dtype, dtype_info
from ..core.errors import RecordError, ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation
from .intmath import ceil_times_log2
from .registry import (
    Expect,
    NonNegative,
    Positive,
    axis_index,
    cost_rule,
    default_cost,
    expect_inputs,
    expect_output,
    read_inputs,
    rows_of,
    where,
)


def sort_comparisons(length: int) -> int:
    """⌈L·log2 L⌉ comparisons for one row of L keys (0 for L < 2), in exact integer arithmetic."""
    if length < 2:
        return 0
    return ceil_times_log2(length, 1, length)


def membership_comparisons(elements: int, tests: int) -> int:
    """Operations for testing each of ``elements`` values against a set of ``tests`` values, as
    ATen's CPU ``isin`` runs it: every pair compared while tests < 10·elements^0.145 — per element
    ``tests`` compares and ``tests - 1`` ors, elements·(2·tests - 1) —, else by sorting: each set's
    unique values (⌈n·log2 n⌉ and ⌈m·log2 m⌉ comparisons), both together (⌈(n+m)·log2(n+m)⌉) and
    n+m-1 neighbours compared. 0 when either set is empty."""
    if elements == 0 or tests == 0:
        return 0
    if tests < 10.0 * elements**0.145:
        return elements * (2 * tests - 1)
    both = elements + tests
    return sort_comparisons(elements) + sort_comparisons(tests) + sort_comparisons(both) + both - 1


def top_k_comparisons(length: int, k: int) -> int:
    """Comparisons to select the k largest of one row of L keys.

    L-1 for k = 1 (a running maximum); otherwise ⌈L·log2 k⌉, every key tested against a
    heap of the k best so far. k = L gives ⌈L·log2 L⌉, a full sort's count. 0 when k = 0
    or L < 2. A backend that sorts the whole row instead does up to ⌈L·log2 L⌉: this
    counts the selection, not that worst case."""
    if k == 0 or length < 2:
        return 0
    if k == 1:
        return length - 1
    return ceil_times_log2(length, 1, k)


@cost_rule(
    "sort",
    "per row of L keys along attrs['axis']: ⌈L·log2 L⌉ comparisons, counted as FLOPs of the key dtype; "
    "with attrs['k'] a top-k along that axis (output: the axis cut to k): L-1 comparisons for k = 1, "
    "else ⌈L·log2 k⌉ (a heap of size k)",
)
def sort(op: Operation, *, axis: int = -1, k: NonNegative | None = None) -> OpCost:
    """A comparison sort's count, stated as comparisons: the work of the sort network or
    merge passes a backend runs differs by a constant factor. Extra operands sorted along
    (values, indices) are read and written but add no comparisons.

    ``attrs['k']`` makes it a top-k selection along ``attrs['axis']`` (default the last):
    the output is the keys' shape with that axis cut to k, extra outputs (indices) as the
    caller states them; comparisons per row as ``top_k_comparisons``."""
    expect_inputs(op, 1, 8, "keys[, operands sorted along]")
    keys = op.inputs[0]
    for i, shape in enumerate(op.inputs[1:], start=1):
        if shape != keys:
            raise ShapeError(f"{where(op)}: inputs[{i}] {shape} must have the keys' shape {keys}")
    if not keys:
        raise ShapeError(f"{where(op)} needs keys of rank >= 1")
    axis = axis_index(op, axis, len(keys))
    rows, length = rows_of(keys, axis)
    if k is None:
        expect_output(op, keys, "a sort keeps the keys' shape")
        return default_cost(op, rows * sort_comparisons(length))
    if k > length:
        raise ShapeError(f"{where(op)} attrs['k']={k} exceeds the {length} keys along axis {axis} of {keys}")
    expect_output(op, (*keys[:axis], k, *keys[axis + 1 :]), f"top-k keeps k={k} along axis {axis}")
    return default_cost(op, rows * top_k_comparisons(length, k))


@cost_rule(
    "membership",
    "whether each of the n elements (inputs[0]) is among m test values (inputs[1]; attrs['tests'] counts them "
    "when they are not in the record, a Python number: 1): n·(2m−1) compares and ors while m < 10·n^0.145, "
    "else both sets' and their union's sort comparisons and n+m−1 neighbours compared (ATen's CPU isin); "
    "the output has the elements' shape",
)
def membership(op: Operation, *, tests: Positive | None = None) -> OpCost:
    """``membership_comparisons`` of the two sets' sizes, charged to attrs['compute_dtype'] (the
    elements' dtype: the output is boolean); every input read once, the answers written."""
    expect_inputs(op, 1, 2, "elements[, test values]")
    elements = op.inputs[0]
    expect_output(op, elements, "one answer per element")
    if len(op.inputs) == 2 and tests is not None:
        raise RecordError(f"{where(op)}: attrs['tests'] counts test values outside the record; inputs[1] holds them")
    m = math.prod(op.inputs[1]) if len(op.inputs) == 2 else 1 if tests is None else tests
    return default_cost(op, membership_comparisons(math.prod(elements), m))


@cost_rule(
    "histogram",
    "x (n elements) counted into B equal bins (the output): per element 2 compares against the range, its bin "
    "(subtract, multiply, divide) and 1 add = 6 (ATen's histc); attrs['range_from_data']: the range is x's own "
    "min and max, 2(n−1) compares and a second read of x first",
)
def histogram(op: Operation, *, range_from_data: bool = False) -> OpCost:
    expect_inputs(op, 1, 1, "x")
    if len(op.output) != 1:
        raise ShapeError(f"{where(op)}: a histogram's output is its bins, (B,); got {op.output}")
    n = math.prod(op.inputs[0])
    flops = 6 * n + (2 * max(n - 1, 0) if range_from_data else 0)
    reads = read_inputs(op) * (2 if range_from_data else 1)
    return OpCost({op.compute_dtype: flops} if flops else {}, reads, op.output_bytes)


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
    "philox2x32-10": (
        64,
        50,
        "10 rounds × (1 mul-hi + 1 mul-lo, 2 xors, 1 key-bump add) = 50",
    ),
    "threefry4x32": (
        128,
        225,
        "20 rounds × 2 mixes × (add, rotate as shl+shr+or, xor) = 200, + 5 key injections × 5 adds = 25",
    ),
    # PyTorch's CPU generator (at::mt19937): one 32-bit output consumes one state word.
    "mt19937": (
        32,
        18,
        "state update, one word per output: mix_bits (2 ands, 1 or) = 3, >> 1, v & 1, select MATRIX_A, xor, "
        "xor with state[j+397] = 8; tempering: y ^= y>>11 (2), y ^= (y<<7) & b (3), y ^= (y<<15) & c (3), "
        "y ^= y>>18 (2) = 10",
    ),
}
DEFAULT_GENERATOR = "philox4x32-10"


@cost_rule(
    "rng",
    "random bits generated = output elements × bits (attrs['bits_per_element'], default the dtype's width); "
    "integer ops per generator block (threefry2x32: 115 per 64 bits; philox4x32-10: 100 per 128 bits; "
    "philox2x32-10: 50 per 64 bits; threefry4x32: 225 per 128 bits; mt19937: 18 per 32 bits); turning the "
    "bits into values (uniform scaling, Box-Muller, a dropout's compare and scale): attrs['flops_per_element'] "
    "and attrs['transcendentals_per_element'] per output element, charged to the compute dtype (default 0)",
)
def rng(
    op: Operation,
    *,
    generator: str | None = None,
    bits_per_element: Positive | None = None,
    flops_per_element: NonNegative = 0,
    transcendentals_per_element: NonNegative = 0,
) -> OpCost:
    """Generator work is integer ops (charged to ``uint32``); the arithmetic that shapes the
    bits into a distribution is ordinary FLOPs of the compute dtype, stated by the builder."""
    notes: tuple[str, ...] = ()
    if generator is None:
        generator = DEFAULT_GENERATOR
        notes = (f"generator not named; counted as {DEFAULT_GENERATOR}",)
    if generator not in RNG_GENERATORS:
        raise RecordError(
            f"{where(op)} attrs['generator']={generator!r} is unknown; use one of {', '.join(RNG_GENERATORS)}"
        )
    if bits_per_element is None:
        bits_per_element = dtype_info(op.dtype).bits
    block_bits, ops_per_block, _ = RNG_GENERATORS[generator]
    bits = math.prod(op.output) * bits_per_element
    blocks = -(-bits // block_bits)
    ops = blocks * ops_per_block
    elements = math.prod(op.output)
    flops: dict[str, int] = {"uint32": ops} if ops else {}
    shaping = flops_per_element * elements
    if shaping:
        flops[op.compute_dtype] = flops.get(op.compute_dtype, 0) + shaping
    transcendentals = transcendentals_per_element * elements
    return OpCost(flops, read_inputs(op), op.output_bytes, transcendentals=transcendentals, notes=notes)


@cost_rule(
    "embedding_bag",
    "rows looked up (N, D), indices (N,), offsets[, per_sample_weights (N,)] → (bags, D): n-1 adds (sum, "
    "mean) or comparisons (max; attrs['mode']) per bag of n rows and feature, + 1 divide per output for mean, "
    "+ 1 multiply per row element with per-sample weights; reads the N rows, never the table",
)
def embedding_bag(op: Operation, *, mode: Literal["sum", "mean", "max"] = "sum") -> OpCost:
    """PyTorch's ``_embedding_bag``: the first input is the rows it gathers (as many as there
    are indices), so the table's size does not enter the traffic. Rows skipped as padding
    are counted as read and combined (an upper bound). Bookkeeping outputs (offsets, sizes,
    max indices) are extra outputs, written."""
    expect_inputs(op, 3, 4, "rows (N, D), indices (N,), offsets[, per_sample_weights (N,)]")
    rows, indices = op.inputs[:2]
    if len(rows) != 2 or math.prod(indices) != rows[0]:
        raise ShapeError(f"{where(op)}: rows {rows} must be (N, D), one row per index of {indices}")
    if len(op.output) != 2 or op.output[1] != rows[1]:
        raise ShapeError(f"{where(op)} output={op.output} must be (bags, {rows[1]})")
    weighted = len(op.inputs) == 4
    if weighted and math.prod(op.inputs[3]) != rows[0]:
        raise ShapeError(f"{where(op)}: per_sample_weights {op.inputs[3]} must hold one weight per row ({rows[0]})")
    count, width = rows
    bags = op.output[0]
    flops = max(count - bags, 0) * width + (bags * width if mode == "mean" else 0)
    return default_cost(op, flops + (count * width if weighted else 0))


@cost_rule(
    "dequantize",
    "a low-precision product's epilogue, (product, scale, scale[, bias][, result scale]) → the product's "
    "shape: 1 multiply per scale and 1 add per bias, i.e. (inputs - 1) per output element; the scales, of any "
    "blocking, are read once",
)
def dequantize(op: Operation) -> OpCost:
    """``_scaled_mm``'s work after its fp8 ``matmul``: a kernel fuses it into the matmul's
    epilogue, so its traffic here (the product read back, the result written) is the
    unfused figure."""
    expect_inputs(op, 2, 6, "product, scales and biases")
    expect_output(op, op.inputs[0], "the epilogue keeps the product's shape")
    return default_cost(op, (len(op.inputs) - 1) * math.prod(op.output))


@cost_rule(
    "pad_backward",
    "gradient of a reflection or replication pad, grad (padded) → the input's shape: each padded "
    "position's gradient added into the element it copied, 1 add per grad element beyond the output's",
)
def pad_backward(op: Operation) -> OpCost:
    """Reads the whole incoming gradient and writes the input gradient once; a cropping
    (negative) pad adds nothing."""
    expect_inputs(op, 1, 1, "grad (padded shape)")
    (grad,) = op.inputs
    if len(grad) != len(op.output):
        raise ShapeError(f"{where(op)}: grad {grad} and the output {op.output} must have the same rank")
    return default_cost(op, max(math.prod(grad) - math.prod(op.output), 0))


@cost_rule(
    "custom",
    "caller-supplied attrs['flops'] (an int, or a mapping dtype → int), attrs['transcendentals'] and optional "
    "read_bytes/write_bytes (default: inputs read once, output written once) and dense_flops",
)
def custom(
    op: Operation,
    *,
    flops: Annotated[
        NonNegative | Mapping[str, NonNegative],
        Expect("the FLOPs of one execution: an integer >= 0, or a mapping dtype → integer >= 0"),
    ],
    transcendentals: NonNegative = 0,
    read_bytes: NonNegative | None = None,
    write_bytes: NonNegative | None = None,
    dense_flops: NonNegative | None = None,
    combines: NonNegative | None = None,
) -> OpCost:
    """Work no rule describes, stated by the caller. ``combines`` is for readers: how many
    times a combining body ran (JAX's generic ``reduce``, whose FLOPs are its body's times
    that, per dtype)."""
    if isinstance(flops, Mapping):
        by_dtype: dict[str, int] = {}
        spelled: dict[str, str] = {}
        for d, n in flops.items():
            dtype = canonical_dtype(d, f"{where(op)} attrs['flops'] key")
            if dtype in by_dtype:  # "fp16" and "float16": keeping either value would drop the other's FLOPs
                raise RecordError(
                    f"{where(op)} attrs['flops'] names {dtype} twice ({spelled[dtype]!r} and {d!r}); "
                    f"give one count per dtype"
                )
            by_dtype[dtype] = n
            spelled[dtype] = d
    else:
        by_dtype = {op.compute_dtype: flops}
    return OpCost(
        {d: n for d, n in by_dtype.items() if n},
        read_inputs(op) if read_bytes is None else read_bytes,
        op.output_bytes if write_bytes is None else write_bytes,
        dense_flops=dense_flops,
        transcendentals=transcendentals,
    )
