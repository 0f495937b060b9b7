"""Strategies (and closed forms) for the norm, resampling, linear-algebra and bookkeeping
kinds; see ``property_cases``."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from neural_cost.costs.other import RNG_GENERATORS
from tests.property_cases import (
    Case,
    Expected,
    adaptive_total_by_loop,
    dim,
    dtypes,
    nbytes,
    plain,
    pos,
    shapes,
    strategy,
)
from tests.property_cases_more import ITEM

# -- norms ----------------------------------------------------------------------------------


@st.composite
def row_norm(draw: Any, kind: str) -> Case:
    x, dtype = draw(shapes(1, 4)), draw(dtypes)
    dims = draw(st.integers(1, len(x)))
    length, rows = math.prod(x[-dims:]), math.prod(x[:-dims])
    affine = draw(st.integers(0, 2 if kind == "layernorm" else 1))
    inputs = (x, *(x[-dims:] for _ in range(affine)))
    if kind == "layernorm":  # mean L, centre L, variance 2L, rstd 2, normalise L
        stats = rows * (5 * length + 2) if length else 0
    else:  # squares L, sum L-1, mean 1, eps 1, rsqrt 1, scale L
        stats = rows * (3 * length + 2) if length else 0
    return Case(
        kind,
        inputs,
        x,
        dtype,
        {"normalized_dims": dims},
        expected=plain(inputs, x, dtype, stats + affine * rows * length, rows),
    )


strategy("layernorm")(lambda: row_norm("layernorm"))
strategy("rmsnorm")(lambda: row_norm("rmsnorm"))


@strategy("groupnorm")
@st.composite
def _groupnorm(draw: Any) -> Case:
    groups, dtype = draw(pos), draw(dtypes)
    x = (draw(dim), groups * draw(pos), *draw(shapes(0, 2)))
    affine = draw(st.integers(0, 2))
    inputs = (x, *((x[1],) for _ in range(affine)))
    rows = x[0] * groups
    length = math.prod(x) // rows if rows else 0
    stats = rows * (5 * length + 2) if length else 0
    return Case(
        "groupnorm",
        inputs,
        x,
        dtype,
        {"groups": groups},
        expected=plain(inputs, x, dtype, stats + affine * math.prod(x), rows),
    )


@strategy("batchnorm")
@st.composite
def _batchnorm(draw: Any) -> Case:
    x, dtype = (draw(dim), draw(dim), *draw(shapes(0, 2))), draw(dtypes)
    affine, training = draw(st.booleans()), draw(st.booleans())
    channels, elements = x[1], math.prod(x)
    inputs = (x, *((channels,) for _ in range(draw(st.integers(0, 4)))))
    attrs: dict[str, Any] = {"training": training}
    if len(inputs) > 1 or draw(st.booleans()):
        attrs["affine"] = affine
    else:
        affine = False
    length = elements // channels if channels else 0
    if training:  # statistics 5L+2 per channel, running stats 4 per channel, scale and shift 2 per element
        flops = (channels * (5 * length + 2) if length else 0) + 4 * channels + (2 * elements if affine else 0)
    elif affine:  # folded: 5 per channel, then x·scale + shift
        flops = 2 * elements + 5 * channels
    else:  # (x - mean)·rstd, + eps and rsqrt per channel
        flops = 2 * elements + 2 * channels
    return Case("batchnorm", inputs, x, dtype, attrs, expected=plain(inputs, x, dtype, flops, channels))


@strategy("norm_backward", closed_form=False)
@st.composite
def _norm_backward(draw: Any) -> Case:
    norm, dtype = draw(st.sampled_from(["layer", "rms", "group", "batch"])), draw(dtypes)
    x = draw(shapes(2 if norm in ("group", "batch") else 1, 4))
    attrs: dict[str, Any] = {
        "norm": norm,
        "grad_input": draw(st.booleans()),
        "grad_weight": draw(st.booleans()),
        "affine": draw(st.booleans()),
        "training": draw(st.booleans()),
    }
    if norm in ("layer", "rms"):
        attrs["normalized_dims"] = draw(st.integers(1, len(x)))
    attrs["grad_bias"] = False if norm == "rms" else draw(st.booleans())
    inputs = (x, x, *draw(st.lists(shapes(0, 2), max_size=5)))
    out = x if attrs["grad_input"] else draw(shapes(0, 2))
    return Case("norm_backward", inputs, out, dtype, attrs)


# -- resampling -----------------------------------------------------------------------------

#: Per output element: a weighted sum of t values is 2t-1; a separable stencil of t taps over d
#: dims evaluates (t^d - 1)/(t - 1) such sums (linear 1·3, bilinear 3·3, trilinear 7·3, bicubic 5·7).
STENCIL = {"linear": 3, "bilinear": 9, "trilinear": 21, "bicubic": 35}
MODE_DIMS = {"linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2}
BACKWARD_TAPS = {"linear": 2, "bilinear": 4, "trilinear": 8, "bicubic": 16}


@st.composite
def resample_case(draw: Any, kind: str) -> Case:
    mode, dtype = draw(st.sampled_from(["nearest", "linear", "bilinear", "trilinear", "bicubic", "area"])), draw(dtypes)
    dims = MODE_DIMS.get(mode, draw(st.integers(1, 3)))
    lead = (draw(dim), draw(dim))
    small, large = (*lead, *draw(shapes(dims, dims, 1, 6))), (*lead, *draw(shapes(dims, dims, 0, 6)))
    channels = lead[0] * lead[1]
    if kind == "interpolate":
        x, out = small, large
        if mode == "nearest":  # a copy; reads min(in, out) per dim
            touched = channels * math.prod(min(i, o) for i, o in zip(x[2:], out[2:], strict=True))
            return Case(
                kind,
                (x,),
                out,
                dtype,
                {"mode": mode},
                expected=Expected(0, 0, touched * ITEM[dtype], nbytes(out, dtype)),
            )
        if mode == "area":
            flops = channels * math.prod(adaptive_total_by_loop(i, o) for i, o in zip(x[2:], out[2:], strict=True))
        else:
            flops = STENCIL[mode] * math.prod(out)
        return Case(kind, (x,), out, dtype, {"mode": mode}, expected=plain((x,), out, dtype, flops))
    grad, out = large, small  # the gradient of x (the output) from the resized gradient
    grads = math.prod(grad)
    if mode == "nearest":
        flops = grads
    elif mode == "area":
        flops = grads + channels * math.prod(
            adaptive_total_by_loop(i, o) for i, o in zip(out[2:], grad[2:], strict=True)
        )
    else:
        flops = 2 * BACKWARD_TAPS[mode] * grads
    return Case(kind, (grad,), out, dtype, {"mode": mode}, expected=plain((grad,), out, dtype, flops))


strategy("interpolate")(lambda: resample_case("interpolate"))
strategy("interpolate_backward")(lambda: resample_case("interpolate_backward"))


@strategy("grid_sample", closed_form=False)
@st.composite
def _grid_sample(draw: Any) -> Case:
    dims, dtype = draw(st.integers(2, 3)), draw(dtypes)
    mode = draw(st.sampled_from(["nearest", "bilinear"] + (["bicubic"] if dims == 2 else [])))
    n, c = draw(dim), draw(dim)
    x, points = (n, c, *draw(shapes(dims, dims))), draw(shapes(dims, dims))
    return Case("grid_sample", (x, (n, *points, dims)), (n, c, *points), dtype, {"mode": mode})


# -- linear algebra -------------------------------------------------------------------------


def ceil_third(numerator: int) -> int:
    return -(-numerator // 3)


@strategy("decomposition")
@st.composite
def _decomposition(draw: Any) -> Case:
    routine, dtype, batch = (
        draw(
            st.sampled_from(
                [
                    "lu",
                    "cholesky",
                    "qr",
                    "svd",
                    "eigh",
                    "eig",
                    "triangular_solve",
                    "lu_solve",
                    "solve",
                    "inverse",
                    "det",
                    "slogdet",
                    "householder_product",
                ]
            )
        ),
        draw(dtypes),
        draw(shapes(0, 2)),
    )
    m, n = draw(dim), draw(dim)
    if routine in ("cholesky", "eigh", "eig", "triangular_solve", "lu_solve", "solve", "inverse", "det", "slogdet"):
        m = n
    if routine == "householder_product":
        m = max(m, n)
    a = (*batch, m, n)
    inputs: tuple[tuple[int, ...], ...] = (a,)
    if routine in ("triangular_solve", "lu_solve", "solve"):
        inputs = (a, (*batch, n, draw(dim))) + (((*batch, n),) if routine == "lu_solve" else ())
    if routine == "householder_product":
        inputs = (a, (*batch, draw(st.integers(0, n))))
    attrs = {"routine": routine}
    count = math.prod(batch)
    expected = None
    long, short = max(m, n), min(m, n)
    if routine == "lu":  # getrf: m·n² - n³/3 (m ≥ n), rounded up
        expected = plain(inputs, a, dtype, count * ceil_third(3 * long * short * short - short**3))
    elif routine == "cholesky":  # potrf: n³/3
        expected = plain(inputs, a, dtype, count * ceil_third(n**3))
    elif routine == "inverse":  # getrf + getri: 2n³
        expected = plain(inputs, a, dtype, count * 2 * n**3)
    return Case("decomposition", inputs, a, dtype, attrs, expected=expected)


# -- bookkeeping kinds ----------------------------------------------------------------------


@strategy("callback")
@st.composite
def _callback(draw: Any) -> Case:
    inputs, out, dtype = tuple(draw(st.lists(shapes(0, 2), max_size=3))), draw(shapes(0, 2)), draw(dtypes)
    known = draw(st.booleans())
    attrs = {"results_known": known} | ({"target": "host_fn"} if draw(st.booleans()) else {})
    read = sum(nbytes(s, dtype) for s in inputs)
    return Case(
        "callback", inputs, out, dtype, attrs, expected=Expected(0, 0, read, nbytes(out, dtype) if known else 0)
    )


@strategy("collective")
@st.composite
def _collective(draw: Any) -> Case:
    # one device's share: the input read, the output written; a reduction combines (n-1)/n of
    # the input's elements (costs/collectives.py); the output is what the collective makes
    inputs, out, dtype = (draw(shapes(0, 3)),), draw(shapes(0, 3)), draw(dtypes)
    which = draw(st.sampled_from(("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "permute", "broadcast")))
    n = draw(st.integers(1, 16))
    elements = math.prod(inputs[0])
    flops = (n - 1) * elements // n if which in ("all_reduce", "reduce_scatter") and n > 1 else 0
    read, write = nbytes(inputs[0], dtype), nbytes(out, dtype)
    return Case(
        "collective",
        inputs,
        out,
        dtype,
        {"collective": which, "group_size": n},
        expected=Expected(flops, 0, read, write),
    )


@strategy("custom")
@st.composite
def _custom(draw: Any) -> Case:
    inputs, out, dtype = tuple(draw(st.lists(shapes(0, 2), max_size=2))), draw(shapes(0, 2)), draw(dtypes)
    flops, trans = draw(st.integers(0, 10**6)), draw(st.integers(0, 100))
    return Case(
        "custom",
        inputs,
        out,
        dtype,
        {"flops": flops, "transcendentals": trans},
        expected=plain(inputs, out, dtype, flops, trans),
    )


@strategy("dequantize")
@st.composite
def _dequantize(draw: Any) -> Case:
    product, dtype = draw(shapes(0, 3)), draw(dtypes)
    inputs = (product, *draw(st.lists(shapes(0, 2), min_size=1, max_size=5)))
    # one multiply per scale, one add per bias: (inputs - 1) per output element
    return Case(
        "dequantize",
        inputs,
        product,
        dtype,
        expected=plain(inputs, product, dtype, (len(inputs) - 1) * math.prod(product)),
    )


@strategy("pad_backward")
@st.composite
def _pad_backward(draw: Any) -> Case:
    grad, dtype = draw(shapes(1, 3)), draw(dtypes)
    out = tuple(draw(st.integers(0, 5)) for _ in grad)
    flops = max(math.prod(grad) - math.prod(out), 0)  # each padded position added into its source
    return Case("pad_backward", (grad,), out, dtype, expected=plain((grad,), out, dtype, flops))


@strategy("nll_loss")
@st.composite
def _nll_loss(draw: Any) -> Case:
    targets, dtype = draw(shapes(1, 2)), draw(dtypes)
    n = math.prod(targets)
    reduction, weighted = draw(st.sampled_from(["none", "sum", "mean"])), draw(st.booleans())
    inputs = ((n,), targets) + (((n,),) if weighted else ())
    out = targets if reduction == "none" else ()
    flops = (2 + weighted) * n  # ignore_index test, negate (, weight)
    flops += {"none": 0, "sum": max(n - 1, 0), "mean": 2 * max(n - 1, 0) + 1}[reduction]
    return Case(
        "nll_loss",
        inputs,
        out,
        dtype,
        {"reduction": reduction},
        input_dtypes=(dtype, "int64", dtype)[: len(inputs)],
        expected=Expected(
            flops,
            0,
            sum(nbytes(s, d) for s, d in zip(inputs, (dtype, "int64", dtype)[: len(inputs)], strict=True)),
            nbytes(out, dtype),
        ),
    )


@strategy("nll_loss_backward")
@st.composite
def _nll_loss_backward(draw: Any) -> Case:
    out, dtype = draw(shapes(1, 3)), draw(dtypes)
    targets = () if len(out) == 1 else (out[0], *out[2:])
    reduction, weighted = draw(st.sampled_from(["none", "sum", "mean"])), draw(st.booleans())
    inputs = ((), targets, *(((out[1] if len(out) > 1 else out[0],),) if weighted else ()), ())
    flops = (3 + weighted + (reduction == "mean")) * math.prod(targets)
    return Case(
        "nll_loss_backward", inputs, out, dtype, {"reduction": reduction}, expected=plain(inputs, out, dtype, flops)
    )


@strategy("embedding_bag")
@st.composite
def _embedding_bag(draw: Any) -> Case:
    count, width, bags, dtype = draw(dim), draw(dim), draw(dim), draw(dtypes)
    mode, weighted = draw(st.sampled_from(["sum", "mean", "max"])), draw(st.booleans())
    inputs = ((count, width), (count,), (bags,)) + (((count,),) if weighted else ())
    flops = max(count - bags, 0) * width + (bags * width if mode == "mean" else 0) + (count * width if weighted else 0)
    return Case(
        "embedding_bag",
        inputs,
        (bags, width),
        dtype,
        {"mode": mode},
        expected=plain(inputs, (bags, width), dtype, flops),
    )


@strategy("qkv_bias_rescale")
@st.composite
def _qkv_bias_rescale(draw: Any) -> Case:
    rows, embed, dtype = draw(shapes(0, 2)), draw(dim), draw(dtypes)
    qkv = (*rows, 3 * embed)
    split = draw(st.booleans())
    out, extra = ((*rows, embed), ((*rows, embed),) * 2) if split else (qkv, ())
    # the bias added to q, k and v (3D), q scaled by 1/√D (D): 4D per row
    read = nbytes(qkv, dtype) + nbytes((3 * embed,), dtype)
    return Case(
        "qkv_bias_rescale",
        (qkv, (3 * embed,)),
        out,
        dtype,
        extra_outputs=extra,
        expected=Expected(4 * math.prod(rows) * embed, 0, read, nbytes(qkv, dtype)),
    )


@strategy("rnn_gate_backward", closed_form=False)
@st.composite
def _rnn_gate_backward(draw: Any) -> Case:
    mode, dtype = draw(st.sampled_from(["lstm", "gru", "rnn_tanh", "rnn_relu"])), draw(dtypes)
    gates = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}[mode]
    out = (draw(dim), gates * draw(dim))
    inputs = tuple(draw(st.lists(shapes(0, 2), min_size=1, max_size=6)))
    return Case("rnn_gate_backward", inputs, out, dtype, {"mode": mode})


@strategy("rng")
@st.composite
def _rng(draw: Any) -> Case:
    out, dtype = draw(shapes(0, 3)), draw(dtypes)
    generator = draw(st.sampled_from(sorted(RNG_GENERATORS)))
    bits, per, trans = draw(st.integers(1, 64)), draw(st.integers(0, 3)), draw(st.integers(0, 2))
    block_bits, ops_per_block, _ = RNG_GENERATORS[generator]  # the generators' table is data
    elements = math.prod(out)
    blocks = -(-elements * bits // block_bits)
    attrs = {
        "generator": generator,
        "bits_per_element": bits,
        "flops_per_element": per,
        "transcendentals_per_element": trans,
    }
    return Case(
        "rng",
        (),
        out,
        dtype,
        attrs,
        expected=Expected(
            blocks * ops_per_block + per * elements,
            trans * elements,
            0,
            nbytes(out, dtype),
            by_dtype={"uint32": blocks * ops_per_block, dtype: per * elements},
        ),
    )
