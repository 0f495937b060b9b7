"""Hypothesis strategies of valid records for every kind, with the test's own closed forms.

Each ``STRATEGIES[kind]`` draws a ``Case``: a valid record of that kind (small shapes, attrs
drawn from the rule's typed signature) and, for the main kinds, the cost it must have,
computed here independently of ``neural_cost.costs`` — written from the textbook formula, or
by brute force over the (small) index space where the rule uses a closed form (causal
tiles, adaptive windows, lhs-dilated taps, ⌈L·log2 L⌉ as the least c with 2^c ≥ L^L).
Data the catalog *is* (per-element counts, generator tables) is read from it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import strategies as st

from neural_cost import Operation

ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "complex64": 8}
FLOATS = ("float32", "float16", "bfloat16", "float64")


def nbytes(shape: tuple[int, ...], dtype: str) -> int:
    return math.prod(shape) * ITEMSIZE[dtype]


@dataclass(frozen=True)
class Expected:
    flops: int
    transcendentals: int
    read_bytes: int
    write_bytes: int
    dense_flops: int | None = None
    flops_dtype: str | None = None  # the dtype FLOPs are charged to, when not the record's
    by_dtype: dict[str, int] | None = None  # FLOPs split over several dtypes


@dataclass(frozen=True)
class Case:
    kind: str
    inputs: tuple[tuple[int, ...], ...]
    output: tuple[int, ...]
    dtype: str = "float32"
    attrs: dict[str, Any] = field(default_factory=dict)
    input_dtypes: tuple[str, ...] | None = None
    extra_outputs: tuple[tuple[int, ...], ...] = ()
    expected: Expected | None = None

    def build(self, **changes: Any) -> Operation:
        case = replace(self, **changes) if changes else self
        return Operation(
            "p",
            case.kind,
            case.inputs,
            case.output,
            case.dtype,
            attrs=case.attrs,
            input_dtypes=case.input_dtypes,
            extra_outputs=case.extra_outputs,
        )


def plain(
    case_inputs: tuple[tuple[int, ...], ...],
    output: tuple[int, ...],
    dtype: str,
    flops: int,
    trans: int = 0,
    dense: int | None = None,
) -> Expected:
    """Every input read once, the output written once."""
    return Expected(flops, trans, sum(nbytes(s, dtype) for s in case_inputs), nbytes(output, dtype), dense)


STRATEGIES: dict[str, Callable[[], st.SearchStrategy[Case]]] = {}
#: The kinds whose strategy states the expected cost (the rest: finite, non-negative ints only).
CLOSED_FORM: set[str] = set()


def strategy(kind: str, closed_form: bool = True) -> Callable[[Any], Any]:
    def register(build: Any) -> Any:
        STRATEGIES[kind] = build
        if closed_form:
            CLOSED_FORM.add(kind)
        return build

    return register


dim = st.integers(0, 4)
pos = st.integers(1, 4)
dtypes = st.sampled_from(FLOATS)


def shapes(min_rank: int = 0, max_rank: int = 3, low: int = 0, high: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(st.integers(low, high), min_size=min_rank, max_size=max_rank).map(tuple)


def per_dim(draw: Any, values: list[int]) -> int | tuple[int, ...]:
    """One int for every dim when they agree and the draw says so, else one per dim."""
    return values[0] if len(set(values)) == 1 and draw(st.booleans()) else tuple(values)


# -- contractions ---------------------------------------------------------------------------


@strategy("linear")
@st.composite
def _linear(draw: Any) -> Case:
    lead, k, n, dtype = draw(shapes(0, 2)), draw(dim), draw(dim), draw(dtypes)
    layout = draw(st.sampled_from(["in_out", "out_in"]))
    weight = (k, n) if layout == "in_out" else (n, k)
    inputs, out = ((*lead, k), weight), (*lead, n)
    return Case(
        "linear",
        inputs,
        out,
        dtype,
        {"weight_layout": layout},
        expected=plain(inputs, out, dtype, 2 * math.prod(lead) * k * n),
    )


@strategy("matmul")
@st.composite
def _matmul(draw: Any) -> Case:
    m, k, n, dtype = draw(dim), draw(dim), draw(dim), draw(dtypes)
    if draw(st.booleans()):  # dot_general: batch, lhs and rhs dims in any order
        batch = draw(dim)
        lhs_order = draw(st.permutations(["b", "m", "k"]))
        rhs_order = draw(st.permutations(["b", "k", "n"]))
        size = {"b": batch, "m": m, "k": k, "n": n}
        lhs, rhs = tuple(size[d] for d in lhs_order), tuple(size[d] for d in rhs_order)
        numbers = ((lhs_order.index("k"),), (rhs_order.index("k"),)), ((lhs_order.index("b"),), (rhs_order.index("b"),))
        out = (batch, m, n)
        return Case(
            "matmul",
            (lhs, rhs),
            out,
            dtype,
            {"dimension_numbers": numbers},
            expected=plain((lhs, rhs), out, dtype, 2 * batch * m * k * n),
        )
    batch = draw(shapes(0, 2, 1, 3))
    lhs_batch = tuple(d if draw(st.booleans()) else 1 for d in batch)[draw(st.integers(0, len(batch))) :]
    rhs_batch = tuple(d if draw(st.booleans()) else 1 for d in batch)[draw(st.integers(0, len(batch))) :]
    rank = max(len(lhs_batch), len(rhs_batch))
    padded = [(1,) * (rank - len(b)) + b for b in (lhs_batch, rhs_batch)]
    out_batch = tuple(max(a, b) for a, b in zip(*padded, strict=True))
    vector_lhs, vector_rhs = draw(st.booleans()), draw(st.booleans())
    lhs = (k,) if vector_lhs else (*lhs_batch, m, k)
    rhs = (k,) if vector_rhs else (*rhs_batch, k, n)
    batch_out = (
        () if vector_lhs and vector_rhs else (rhs_batch if vector_lhs else lhs_batch if vector_rhs else out_batch)
    )
    out = (*batch_out, *(() if vector_lhs else (m,)), *(() if vector_rhs else (n,)))
    return Case("matmul", (lhs, rhs), out, dtype, expected=plain((lhs, rhs), out, dtype, 2 * math.prod(out) * k))


@strategy("grouped_matmul")
@st.composite
def _grouped_matmul(draw: Any) -> Case:
    """PyTorch's four ``_grouped_mm`` layouts: rows, columns or the contracted dim split among G groups, or a batch."""
    g, m, k, n, dtype = draw(dim), draw(dim), draw(dim), draw(dim), draw(dtypes)
    split = draw(st.sampled_from(["rows", "columns", "contracted", "batch"]))
    lhs, rhs, out, attrs = {
        "rows": ((m, k), (g, k, n), (m, n), {}),
        "columns": ((g, m, k), (k, n), (m, n), {"group_dims": ((0,), ()),
                                                "dimension_numbers": (((2,), (0,)), ((), ()))}),
        "contracted": ((m, k), (k, n), (g, m, n), {"group_dims": ((), ()), "ragged_contracting": True,
                                                   "dimension_numbers": (((1,), (0,)), ((), ()))}),
        "batch": ((g, m, k), (g, k, n), (g, m, n), {"group_dims": ((), ()),
                                                    "dimension_numbers": (((2,), (1,)), ((0,), (0,)))}),
    }[split]  # fmt: skip
    flops = 2 * m * k * n * (g if split == "batch" else 1)  # each index of the split dim in one group
    return Case("grouped_matmul", (lhs, rhs), out, dtype, attrs, expected=plain((lhs, rhs), out, dtype, flops))


@strategy("histogram")
@st.composite
def _histogram(draw: Any) -> Case:
    x, bins, dtype, from_data = draw(shapes(0, 3)), draw(pos), draw(dtypes), draw(st.booleans())
    n = math.prod(x)
    flops = 6 * n + (2 * max(n - 1, 0) if from_data else 0)  # range tests, bin, add; the data's min and max
    expected = Expected(flops, 0, (2 if from_data else 1) * nbytes(x, dtype), nbytes((bins,), dtype))
    return Case("histogram", (x,), (bins,), dtype, {"range_from_data": from_data}, expected=expected)


def causal_row_keys_by_loop(q_len: int, k_len: int, alignment: str, blocks: tuple[int, int] | None) -> list[int]:
    """The keys each query row executes."""
    offset = k_len - q_len if alignment == "bottom_right" else 0
    if blocks is None:
        return [min(max(i + 1 + offset, 0), k_len) for i in range(q_len)]
    if q_len == 0 or k_len == 0:
        return [0] * q_len
    q_block, kv_block = min(blocks[0], q_len), min(blocks[1], k_len)
    keys = []
    for start in range(0, q_len, q_block):  # every pair of every tile the mask touches
        rows = min(q_block, q_len - start)
        last_key = min(max(start + rows + offset, 0), k_len)  # keys the block's last query sees
        tiles = -(-last_key // kv_block)
        keys += [min(tiles * kv_block, k_len)] * rows
    return keys


def causal_pairs_by_loop(q_len: int, k_len: int, alignment: str, blocks: tuple[int, int] | None) -> int:
    return sum(causal_row_keys_by_loop(q_len, k_len, alignment, blocks))


@st.composite
def attention_case(draw: Any, kind: str) -> Case:
    batch, kv_heads, group, q_len, k_len = (
        draw(dim),
        draw(pos),
        draw(pos),
        draw(st.integers(0, 9)),
        draw(st.integers(0, 9)),
    )
    head, value, dtype = draw(dim), draw(dim), draw(dtypes)
    q_heads = kv_heads * group
    q, k, v = (batch, q_heads, q_len, head), (batch, kv_heads, k_len, head), (batch, kv_heads, k_len, value)
    attrs: dict[str, Any] = {}
    row_keys = [k_len] * q_len
    if draw(st.booleans()):
        alignment = draw(st.sampled_from(["top_left", "bottom_right"]))
        blocks = draw(st.none() | st.tuples(st.integers(1, 5), st.integers(1, 5)))
        attrs = {"causal": True, "skips_masked": True, "causal_alignment": alignment}
        if blocks is not None:
            attrs["causal_blocks"] = blocks
        row_keys = causal_row_keys_by_loop(q_len, k_len, alignment, blocks)
    pairs = sum(row_keys)
    heads = batch * q_heads
    if kind == "attention":
        inputs = (q, k, v) + (((1, 1, q_len, k_len),) if draw(st.booleans()) else ())
        out = (batch, q_heads, q_len, value)
        per_pair = 2 * (head + value)
        # per row of L executed keys: the matmuls, L scale multiplies, softmax's 5L-2 (none for L = 0)
        flops = heads * sum(n * per_pair + n + 5 * n - 2 for n in row_keys if n)
        return Case(
            kind,
            inputs,
            out,
            dtype,
            attrs,
            expected=plain(inputs, out, dtype, flops, heads * pairs, heads * q_len * k_len * per_pair),
        )
    inputs = (q, k, v, *draw(st.lists(shapes(0, 4), max_size=3)))
    out = q
    per_pair = 2 * (3 * head + 2 * value)
    return Case(
        kind,
        inputs,
        out,
        dtype,
        attrs,
        expected=plain(inputs, out, dtype, heads * pairs * per_pair, heads * pairs, heads * q_len * k_len * per_pair),
    )


strategy("attention")(lambda: attention_case("attention"))
strategy("attention_backward")(lambda: attention_case("attention_backward"))


@strategy("cdist")
@st.composite
def _cdist(draw: Any) -> Case:
    batch, p_rows, r_rows, width, dtype = draw(shapes(0, 2)), draw(dim), draw(dim), draw(dim), draw(dtypes)
    p = draw(st.sampled_from([0, 1, 2, 3, 0.5, 2.0, "inf"]))
    inputs, out = ((*batch, p_rows, width), (*batch, r_rows, width)), (*batch, p_rows, r_rows)
    pairs = math.prod(out)
    if width == 0:
        per, trans = 0, 0
    elif p == 2:
        per, trans = 3 * width, 1  # subtract, square, add; one sqrt
    elif p in (0, 1, "inf"):
        per, trans = 3 * width - 1, 0  # subtract, abs (or != 0), M-1 adds or maxes
    else:
        per, trans = 4 * width, width + 1  # subtract, abs, pow, add; the root
    return Case("cdist", inputs, out, dtype, {"p": p}, expected=plain(inputs, out, dtype, pairs * per, pairs * trans))


# -- convolution and pooling ----------------------------------------------------------------


def out_size(size: int, kernel: int, stride: int, pad: int, dilation: int) -> int:
    room = size + pad - dilation * (kernel - 1) - 1  # pad: low + high
    return room // stride + 1 if room >= 0 else 0


def real_taps_by_loop(size: int, kernel: int, lhs: int, stride: int, dilation: int, pad_low: int) -> int:
    """(element i, tap j) pairs whose tap lands on an output: i·lhs + pad_low - j·dilation ≡ 0 (mod stride)."""
    return sum(1 for i in range(size) for j in range(kernel) if (i * lhs + pad_low - j * dilation) % stride == 0)


@strategy("conv")
@st.composite
def _conv(draw: Any) -> Case:
    ndim, groups, dtype = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(dtypes)
    batch, c_in, c_out = draw(st.integers(0, 2)), groups * draw(pos), groups * draw(pos)
    kernel = [draw(st.integers(1, 3)) for _ in range(ndim)]
    stride = [draw(st.integers(1, 3)) for _ in range(ndim)]
    dilation = [draw(st.integers(1, 2)) for _ in range(ndim)]
    spatial = [draw(st.integers(0, 6)) for _ in range(ndim)]
    mode = draw(st.sampled_from(["plain", "transposed", "lhs_dilation"]))
    attrs: dict[str, Any] = {"groups": groups, "stride": per_dim(draw, stride), "dilation": per_dim(draw, dilation)}
    if mode == "transposed":
        pads = [draw(st.integers(0, 1)) for _ in range(ndim)]
        extra = [draw(st.integers(0, 1)) for _ in range(ndim)]
        sizes = [
            (s - 1) * st_ - 2 * p + d * (k - 1) + e + 1
            for s, st_, p, d, k, e in zip(spatial, stride, pads, dilation, kernel, extra, strict=True)
        ]
        if min(sizes) < 0:
            spatial = [max(s, 2) for s in spatial]
            sizes = [
                (s - 1) * st_ - 2 * p + d * (k - 1) + e + 1
                for s, st_, p, d, k, e in zip(spatial, stride, pads, dilation, kernel, extra, strict=True)
            ]
        attrs |= {"transposed": True, "padding": per_dim(draw, pads), "output_padding": per_dim(draw, extra)}
        inputs = ((batch, c_in, *spatial), (c_in, c_out // groups, *kernel))
        out = (batch, c_out, *sizes)
        flops = 2 * batch * math.prod(spatial) * c_in * (c_out // groups) * math.prod(kernel)
        return Case("conv", inputs, out, dtype, attrs, expected=plain(inputs, out, dtype, flops))
    pairs = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(ndim)]
    if draw(st.booleans()):
        pairs = [(abs(lo), abs(lo)) for lo, _ in pairs]
        attrs["padding"] = per_dim(draw, [lo for lo, _ in pairs])
    else:
        attrs["padding"] = tuple(pairs)
    lhs = [draw(st.integers(1, 3)) if mode == "lhs_dilation" else 1 for _ in range(ndim)]
    if mode == "lhs_dilation":
        attrs["lhs_dilation"] = per_dim(draw, lhs)
    dilated = [(s - 1) * ld + 1 if s else 0 for s, ld in zip(spatial, lhs, strict=True)]
    sizes = [
        out_size(s, k, st_, lo + hi, d)
        for s, k, st_, (lo, hi), d in zip(dilated, kernel, stride, pairs, dilation, strict=True)
    ]
    inputs = ((batch, c_in, *spatial), (c_out, c_in // groups, *kernel))
    out = (batch, c_out, *sizes)
    if any(ld > 1 for ld in lhs):  # the transposed convention: real taps that land on an output
        taps = math.prod(
            real_taps_by_loop(s, k, ld, st_, d, lo)
            for s, k, ld, st_, d, (lo, _) in zip(spatial, kernel, lhs, stride, dilation, pairs, strict=True)
        )
        flops = 2 * batch * (c_in // groups) * c_out * taps
    else:
        flops = 2 * math.prod(out) * (c_in // groups) * math.prod(kernel)
    return Case("conv", inputs, out, dtype, attrs, expected=plain(inputs, out, dtype, flops))


@st.composite
def window_case(draw: Any, kind: str) -> Case:
    ndim, dtype = draw(st.integers(1, 3)), draw(dtypes)
    lead = (draw(st.integers(0, 2)), draw(st.integers(1, 2)))
    kernel = [draw(st.integers(1, 3)) for _ in range(ndim)]
    stride = [draw(st.integers(1, 3)) for _ in range(ndim)]
    dilation = [draw(st.integers(1, 2)) for _ in range(ndim)]
    pads = [draw(st.integers(0, 1)) for _ in range(ndim)]
    spatial = [draw(st.integers(0, 6)) for _ in range(ndim)]
    attrs: dict[str, Any] = {
        "kernel": tuple(kernel),
        "dilation": per_dim(draw, dilation),
        "padding": per_dim(draw, pads),
    }
    if draw(st.booleans()):
        attrs["stride"] = per_dim(draw, stride)
    else:
        stride = kernel  # no stride: the window size
    x = (*lead, *spatial)
    pooled = (
        *lead,
        *(
            out_size(s, k, st_, 2 * p, d)
            for s, k, st_, p, d in zip(spatial, kernel, stride, pads, dilation, strict=True)
        ),
    )
    window = math.prod(kernel)
    if kind == "pooling":
        mode = draw(st.sampled_from(["max", "min", "avg", "sum"]))
        per_output = window if mode == "avg" else window - 1
        return Case(
            kind,
            (x,),
            pooled,
            dtype,
            attrs | {"mode": mode},
            expected=plain((x,), pooled, dtype, math.prod(pooled) * per_output),
        )
    mode = draw(st.sampled_from(["max", "min"]))
    return Case(
        kind,
        (pooled, x),
        x,
        dtype,
        attrs | {"mode": mode},
        expected=plain((pooled, x), x, dtype, math.prod(pooled) * window),
    )


strategy("pooling")(lambda: window_case("pooling"))
strategy("pooling_backward")(lambda: window_case("pooling_backward"))


def adaptive_total_by_loop(size: int, out: int) -> int:
    return sum(-(-(i + 1) * size // out) - (i * size // out) for i in range(out))


@strategy("adaptive_pooling")
@st.composite
def _adaptive_pooling(draw: Any) -> Case:
    spatial_dims, dtype = draw(st.integers(1, 3)), draw(dtypes)
    lead, sizes, pooled = (
        draw(shapes(0, 2)),
        draw(shapes(spatial_dims, spatial_dims)),
        draw(shapes(spatial_dims, spatial_dims)),
    )
    mode = draw(st.sampled_from(["avg", "max"]))
    pooled = tuple(o if s else 0 for s, o in zip(sizes, pooled, strict=True))  # an empty dim pools to nothing
    x, out = (*lead, *sizes), (*lead, *pooled)
    windows = math.prod(lead) * math.prod(adaptive_total_by_loop(s, o) for s, o in zip(sizes, pooled, strict=True))
    flops = windows if mode == "avg" else windows - math.prod(out)
    return Case(
        "adaptive_pooling",
        (x,),
        out,
        dtype,
        {"spatial_dims": spatial_dims, "mode": mode},
        expected=plain((x,), out, dtype, flops),
    )


@strategy("pooling_gradient")
@st.composite
def _pooling_gradient(draw: Any) -> Case:
    spatial_dims, dtype = draw(st.integers(1, 3)), draw(dtypes)
    lead, sizes, pooled = (
        draw(shapes(0, 2)),
        draw(shapes(spatial_dims, spatial_dims)),
        draw(shapes(spatial_dims, spatial_dims)),
    )
    mode = draw(st.sampled_from(["max", "avg", "adaptive_avg"]))
    grad, out = (*lead, *pooled), (*lead, *sizes)
    attrs: dict[str, Any] = {"mode": mode, "spatial_dims": spatial_dims}
    inputs: tuple[tuple[int, ...], ...] = (grad,)
    if mode == "max":
        inputs, flops = (grad, grad), math.prod(grad)
    elif mode == "avg":
        kernel = [draw(pos) for _ in range(spatial_dims)]
        attrs["kernel"] = per_dim(draw, kernel)
        flops = math.prod(grad) * (math.prod(kernel) + 1)
    else:
        windows = math.prod(adaptive_total_by_loop(s, o) for s, o in zip(sizes, pooled, strict=True))
        flops = math.prod(lead) * (windows + math.prod(pooled))
    return Case("pooling_gradient", inputs, out, dtype, attrs, expected=plain(inputs, out, dtype, flops))
