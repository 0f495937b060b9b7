"""Strategies (and closed forms) for the pointwise, movement, sorting and spectral kinds;
see ``property_cases``."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from neural_cost.costs.catalog import CATALOG
from tests.property_cases import (
    Case,
    Expected,
    dim,
    dtypes,
    nbytes,
    plain,
    pos,
    shapes,
    strategy,
)

# -- pointwise, reductions, scans -----------------------------------------------------------


def broadcastable(draw: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to ``shape``: some leading dims dropped, some dims set to 1."""
    cut = draw(st.integers(0, len(shape)))
    return tuple(1 if draw(st.booleans()) else d for d in shape[cut:])


def squarings_and_multiplies(exponent: int) -> int:
    """Exponentiation by squaring, counted by walking the exponent's bits."""
    if exponent in (0, 1):
        return 0
    magnitude, ops, seen_top = abs(exponent), 0, False
    for bit in bin(magnitude)[2:]:
        if seen_top:
            ops += 1 + (bit == "1")  # square, and multiply on a set bit
        seen_top = True
    return ops + (exponent < 0)  # a final reciprocal


@strategy("elementwise")
@st.composite
def _elementwise(draw: Any) -> Case:
    out, dtype = draw(shapes(0, 3)), draw(dtypes)
    inputs = (out, *(broadcastable(draw, out) for _ in range(draw(st.integers(0, 2)))))
    form = draw(st.sampled_from(["catalog", "explicit", "integer_pow", "fill"]))
    if form == "fill":
        name = draw(st.sampled_from(["fill", "iota", "arange"]))
        return Case("elementwise", (), out, dtype, {"op": name}, expected=plain((), out, dtype, 0))
    elements = math.prod(out)
    if form == "catalog":
        name, extra = draw(st.sampled_from(sorted(CATALOG))), draw(st.integers(0, 2))
        entry = CATALOG[name]
        attrs = {"op": name} | ({"extra_multiplies": extra} if extra else {})
        return Case(
            "elementwise",
            inputs,
            out,
            dtype,
            attrs,
            expected=plain(inputs, out, dtype, (entry.flops + extra) * elements, entry.transcendentals * elements),
        )
    if form == "integer_pow":
        exponent = draw(st.integers(-40, 40))
        return Case(
            "elementwise",
            inputs[:1],
            out,
            dtype,
            {"op": "integer_pow", "exponent": exponent},
            expected=plain(inputs[:1], out, dtype, squarings_and_multiplies(exponent) * elements),
        )
    per, trans = draw(st.integers(0, 5)), draw(st.integers(0, 2))
    return Case(
        "elementwise",
        inputs,
        out,
        dtype,
        {"flops_per_element": per, "transcendentals_per_element": trans},
        expected=plain(inputs, out, dtype, per * elements, trans * elements),
    )


@strategy("reduce")
@st.composite
def _reduce(draw: Any) -> Case:
    x, dtype = draw(shapes(1, 4)), draw(dtypes)
    axes = draw(st.sets(st.integers(0, len(x) - 1), min_size=1))
    keep = draw(st.booleans())
    out = (
        tuple(1 if i in axes else d for i, d in enumerate(x))
        if keep
        else tuple(d for i, d in enumerate(x) if i not in axes)
    )
    written = tuple(a - len(x) if draw(st.booleans()) else a for a in sorted(axes))  # negative axes too
    per_out, trans_out = draw(st.integers(0, 3)), draw(st.integers(0, 2))
    n_in, n_out = math.prod(x), math.prod(out)
    flops = max(n_in - n_out, 0) + per_out * n_out  # n values to one: n-1 ops
    attrs = {"axes": written, "flops_per_output": per_out, "transcendentals_per_output": trans_out}
    return Case("reduce", (x,), out, dtype, attrs, expected=plain((x,), out, dtype, flops, trans_out * n_out))


def rows_and_length(draw: Any, x: tuple[int, ...]) -> tuple[int, int, int]:
    axis = draw(st.integers(-len(x), len(x) - 1))
    length = x[axis]
    return axis, math.prod(x) // length if length else 0, length


@strategy("softmax")
@st.composite
def _softmax(draw: Any) -> Case:
    x, dtype, log = draw(shapes(1, 3)), draw(dtypes), draw(st.booleans())
    axis, rows, length = rows_and_length(draw, x)
    if length == 0:
        flops, trans = 0, 0
    elif log:  # max L-1, subtract L, exp L, sum L-1, log 1, subtract L
        flops, trans = rows * (5 * length - 1), rows * (length + 1)
    else:  # max L-1, subtract L, exp L, sum L-1, divide L
        flops, trans = rows * (5 * length - 2), rows * length
    return Case("softmax", (x,), x, dtype, {"axis": axis, "log": log}, expected=plain((x,), x, dtype, flops, trans))


@strategy("safe_softmax")
@st.composite
def _safe_softmax(draw: Any) -> Case:
    x, dtype = draw(shapes(1, 3)), draw(dtypes)
    axis, rows, length = rows_and_length(draw, x)
    # softmax 5L-2, then L compares with -inf, L-1 ands, L selects
    flops = rows * max(8 * length - 3, 0)
    return Case("safe_softmax", (x,), x, dtype, {"axis": axis}, expected=plain((x,), x, dtype, flops, rows * length))


@strategy("softmax_backward")
@st.composite
def _softmax_backward(draw: Any) -> Case:
    x, dtype, log = draw(shapes(1, 3)), draw(dtypes), draw(st.booleans())
    axis, rows, length = rows_and_length(draw, x)
    flops = rows * max(4 * length - 1, 0)  # multiply, sum, subtract, multiply
    return Case(
        "softmax_backward",
        (x, x),
        x,
        dtype,
        {"axis": axis, "log": log},
        expected=plain((x, x), x, dtype, flops, rows * length if log else 0),
    )


@strategy("cumulative")
@st.composite
def _cumulative(draw: Any) -> Case:
    x, dtype = draw(shapes(1, 3)), draw(dtypes)
    axis, rows, length = rows_and_length(draw, x)
    per, trans = draw(st.integers(0, 3)), draw(st.integers(0, 2))
    steps = rows * max(length - 1, 0)
    return Case(
        "cumulative",
        (x,),
        x,
        dtype,
        {"axis": axis, "flops_per_combine": per, "transcendentals_per_combine": trans},
        expected=plain((x,), x, dtype, steps * per, steps * trans),
    )


@strategy("foreach_reduce")
@st.composite
def _foreach_reduce(draw: Any) -> Case:
    tensors, dtype = draw(st.lists(shapes(0, 2), min_size=1, max_size=3)), draw(dtypes)
    fpe, fpo, tpe, tpo = (draw(st.integers(0, 2)) for _ in range(4))
    outs = tuple(() for _ in tensors)
    flops = sum(max(math.prod(s) - 1, 0) + fpe * math.prod(s) + fpo for s in tensors)
    trans = sum(tpe * math.prod(s) + tpo for s in tensors)
    attrs = {
        "flops_per_element": fpe,
        "flops_per_output": fpo,
        "transcendentals_per_element": tpe,
        "transcendentals_per_output": tpo,
    }
    read = sum(nbytes(s, dtype) for s in tensors)
    return Case(
        "foreach_reduce",
        tuple(tensors),
        (),
        dtype,
        attrs,
        extra_outputs=outs[1:],
        expected=Expected(flops, trans, read, nbytes((), dtype) * len(tensors)),
    )


@strategy("foreach_elementwise")
@st.composite
def _foreach_elementwise(draw: Any) -> Case:
    outs, dtype = draw(st.lists(shapes(0, 2), min_size=1, max_size=3)), draw(dtypes)
    lists = draw(st.integers(0, 2))
    inputs = tuple(broadcastable(draw, s) for _ in range(lists) for s in outs) + ((),) * draw(st.integers(0, 1))
    name = draw(st.sampled_from(["add", "mul", "exp", "sigmoid", "lerp"]))
    entry = CATALOG[name]
    elements = sum(math.prod(s) for s in outs)
    read = sum(nbytes(s, dtype) for s in inputs)
    return Case(
        "foreach_elementwise",
        inputs,
        outs[0],
        dtype,
        {"op": name, "lists": lists},
        extra_outputs=tuple(outs[1:]),
        expected=Expected(
            entry.flops * elements, entry.transcendentals * elements, read, sum(nbytes(s, dtype) for s in outs)
        ),
    )


# -- movement -------------------------------------------------------------------------------


def index_dtype(draw: Any) -> str:
    return draw(st.sampled_from(["int64", "int32"]))


@strategy("embedding")
@st.composite
def _embedding(draw: Any) -> Case:
    table, indices, dtype, index = (draw(pos), draw(dim)), draw(shapes(0, 2)), draw(dtypes), index_dtype(draw)
    out = (*indices, table[1])
    read = nbytes(out, dtype) + nbytes(indices, index)  # the touched rows, not the table, and the indices
    return Case(
        "embedding",
        (table, indices),
        out,
        dtype,
        input_dtypes=(dtype, index),
        expected=Expected(0, 0, read, nbytes(out, dtype)),
    )


@strategy("gather")
@st.composite
def _gather(draw: Any) -> Case:
    operand, indices, out = draw(shapes(1, 3, 1)), draw(shapes(0, 2)), draw(shapes(0, 3))
    dtype, index = draw(dtypes), index_dtype(draw)
    read = nbytes(out, dtype) + nbytes(indices, index)  # one operand element per output element
    return Case(
        "gather",
        (operand, indices),
        out,
        dtype,
        input_dtypes=(dtype, index),
        expected=Expected(0, 0, read, nbytes(out, dtype)),
    )


@strategy("scatter")
@st.composite
def _scatter(draw: Any) -> Case:
    operand, indices, updates = draw(shapes(1, 3, 1)), draw(shapes(0, 2)), draw(shapes(0, 2))
    dtype, index = draw(dtypes), index_dtype(draw)
    mode = draw(st.sampled_from(["update", "add", "sub", "mul", "min", "max"]))
    given = math.prod(updates)
    touched = given + draw(st.integers(0, 3)) if draw(st.booleans()) else None
    per_update = draw(st.none() | st.integers(0, 4))
    attrs: dict[str, Any] = {"mode": mode}
    if touched is not None:
        attrs["touched"] = touched
    if per_update is not None:
        attrs["flops_per_update"] = per_update
    written = given if touched is None else touched
    combining = mode != "update"
    read = nbytes(indices, index) + nbytes(updates, dtype) + (written * ITEM[dtype] if combining else 0)
    flops = written * (1 if per_update is None else per_update) if combining else 0
    return Case(
        "scatter",
        (operand, indices, updates),
        operand,
        dtype,
        attrs,
        input_dtypes=(dtype, index, dtype),
        expected=Expected(flops, 0, read, written * ITEM[dtype]),
    )


ITEM = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


@strategy("copy")
@st.composite
def _copy(draw: Any) -> Case:
    inputs, dtype = tuple(draw(st.lists(shapes(0, 3), min_size=1, max_size=3))), draw(dtypes)
    if draw(st.booleans()):
        out = draw(shapes(0, 3))
        return Case("copy", inputs, out, dtype, expected=plain(inputs, out, dtype, 0))
    source = math.prod(inputs[0])
    out = (draw(st.integers(0, source)),)  # a slice keeps at most what its source has
    read = nbytes(out, dtype) + sum(nbytes(s, dtype) for s in inputs[1:])
    return Case("copy", inputs, out, dtype, {"reads": "touched"}, expected=Expected(0, 0, read, nbytes(out, dtype)))


# -- sorting and spectra --------------------------------------------------------------------


def least_power_of_two_at_least(value: int) -> int:
    """The least c with 2^c ≥ value (value ≥ 1): ⌈log2 value⌉, exactly, in integers."""
    return (value - 1).bit_length()


def ceil_l_log2_k(length: int, k: int) -> int:
    """⌈L·log2 k⌉ = the least c with 2^c ≥ k^L."""
    return least_power_of_two_at_least(k**length)


@strategy("membership")
@st.composite
def _membership(draw: Any) -> Case:
    """ATen's CPU isin: pairs compared while m < 10·n^0.145, else three sorts and a neighbour pass."""
    elements, dtype = draw(shapes(0, 2, 0, 9)), draw(dtypes)
    tests = draw(st.one_of(st.none(), shapes(0, 2, 0, 9)))
    n, m = math.prod(elements), 1 if tests is None else math.prod(tests)
    if n == 0 or m == 0:
        flops = 0
    elif m < 10 * n**0.145:
        flops = n * (2 * m - 1)  # m compares and m - 1 ors per element
    else:
        both = n + m
        flops = sum(0 if size < 2 else ceil_l_log2_k(size, size) for size in (n, m, both)) + both - 1
    inputs = (elements,) if tests is None else (elements, tests)
    return Case("membership", inputs, elements, dtype, expected=plain(inputs, elements, dtype, flops))


@strategy("sort")
@st.composite
def _sort(draw: Any) -> Case:
    keys, dtype = draw(shapes(1, 3, 0, 9)), draw(dtypes)
    axis, rows, length = draw(st.integers(-len(keys), len(keys) - 1)), 0, keys[-1]
    length = keys[axis]
    rows = math.prod(keys) // length if length else 0
    operands = draw(st.integers(0, 2))
    inputs = (keys,) * (1 + operands)
    if draw(st.booleans()):
        per_row = 0 if length < 2 else ceil_l_log2_k(length, length)
        return Case("sort", inputs, keys, dtype, {"axis": axis}, expected=plain(inputs, keys, dtype, rows * per_row))
    k = draw(st.integers(0, length))
    per_row = 0 if k == 0 or length < 2 else length - 1 if k == 1 else ceil_l_log2_k(length, k)
    out = list(keys)
    out[axis] = k
    return Case(
        "sort",
        inputs,
        tuple(out),
        dtype,
        {"axis": axis, "k": k},
        expected=plain(inputs, tuple(out), dtype, rows * per_row),
    )


@strategy("fft")
@st.composite
def _fft(draw: Any) -> Case:
    batch, lengths = draw(shapes(0, 2)), draw(shapes(1, 2, 1, 12))
    transform, scaled = draw(st.sampled_from(["c2c", "r2c", "c2r"])), draw(st.booleans())
    points = math.prod(lengths)
    half = (*lengths[:-1], lengths[-1] // 2 + 1)
    if transform == "c2c":
        x, out, in_dtype, out_dtype = (*batch, *lengths), (*batch, *lengths), "complex64", "complex64"
    elif transform == "r2c":
        x, out, in_dtype, out_dtype = (*batch, *lengths), (*batch, *half), "float32", "complex64"
    else:
        x, out, in_dtype, out_dtype = (*batch, *half), (*batch, *lengths), "complex64", "float32"
    # 5·N·log2 N (c2c) or 2.5·N·log2 N, rounded up: the least c with 2^c ≥ N^(5N), or 2^(2c) ≥ N^(5N)
    if points < 2:
        per = 0
    elif transform == "c2c":
        per = least_power_of_two_at_least(points ** (5 * points))
    else:
        per = -(-least_power_of_two_at_least(points ** (5 * points)) // 2)
    flops = math.prod(batch) * per + (math.prod(out) * (2 if out_dtype == "complex64" else 1) if scaled else 0)
    return Case(
        "fft",
        (x,),
        out,
        out_dtype,
        {"lengths": lengths, "transform": transform, "scaled": scaled},
        input_dtypes=(in_dtype,),
        expected=Expected(flops, 0, nbytes(x, in_dtype), nbytes(out, out_dtype), flops_dtype="float32"),
    )
