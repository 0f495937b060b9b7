"""The kernel calibration's micro-programs for JAX: small jitted programs, one kernel class each.

XLA compiles each program into a few kernels (fusions, copies, custom calls); the calibration
reads every kernel's own time from the profiler (``JaxAdapter.profile``), so every kernel of a
program is a point — a dot's fused bias and activation belong to the dot's kernel, a softmax
is a reduce fusion and a loop fusion. The grid spans the kernel kinds XLA:CPU makes, from a few
microseconds to tens of milliseconds on a small CPU: dots (``x @ w`` alone, and with a bias
and an activation fused) over rows 1..4096 and widths 32..3072, batched dots, convolutions
(``lax.conv_general_dilated``, NHWC and NCHW; and fused with a relu and a 2×2 max pool, as a CNN
block runs; two ResNet bottleneck blocks and a head, which XLA fuses into one; filter gradients, each
after its layer's forward convolution), a 2×2 max pool's backward, loop fusions of
elementwise chains from 10³ to 10⁷ elements (and transposed in their fusion: ``microbench_layouts.py``),
reductions over the last axis (sum, mean, max), softmax and a layer norm written in ``jnp``, transposes
(copies), gathers (``jnp.take``: an embedding lookup), pooling (``lax.reduce_window``),
``jax.nn.dot_product_attention``, a ``lax.scan`` of a small cell
(a while loop: its kernels run once per trip), and of a GRU's gates over precomputed projections.
Inputs are fixed random arrays; ``quick`` keeps every class at a few sizes (for tests) but the tails'. Every
program is a function object of its own (the adapter keeps one executable per function and
signature).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from .. import _microgrid as grid
from ..base import MicroProgram
from .microbench_layouts import generic_dots, transposed_pointwise

_Inputs = grid.Inputs[jax.Array]


def _named(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """A fresh function object calling ``fn`` (one executable per program)."""

    def run(*args: Any) -> Any:
        return fn(*args)

    run.__name__ = name
    return run


def _dots(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    for ij, m, k, n in grid.dots(quick):
        x, w = rand(m, k), rand(k, n, k=1)
        if ij % 2:  # a dot fusion: the bias and activation in the dot's kernel
            act = (jax.nn.relu, jax.nn.gelu, jnp.tanh)[ij // 2 % 3]
            fn = _named(lambda x, w, b, a=act: a(x @ w + b), "dot_bias_act")
            yield MicroProgram(f"dot+bias+{act.__name__} {m}x{k}x{n}", fn, (x, w, rand(n, k=2)))
        else:
            yield MicroProgram(f"dot {m}x{k}x{n}", _named(jnp.dot, "dot"), (x, w))
    for batch, m, k, n in grid.batched_dots(quick):
        fn = _named(lambda a, b: jnp.einsum("bmk,bkn->bmn", a, b), "batched_dot")
        yield MicroProgram(f"batched dot {batch}x{m}x{k}x{n}", fn, (rand(batch, m, k), rand(batch, k, n, k=1)))


def _conv(x: jax.Array, w: jax.Array, layout: str, stride: int = 1, groups: int = 1) -> jax.Array:
    spec = ("NHWC", "HWIO", "NHWC") if layout == "NHWC" else ("NCHW", "OIHW", "NCHW")
    return lax.conv_general_dilated(x, w, (stride, stride), "SAME", dimension_numbers=spec, feature_group_count=groups)


def _pooled_conv(x: jax.Array, w: jax.Array) -> jax.Array:
    """A stride-1 convolution, a relu and a 2×2 max pool of stride 2, as a CNN block runs them."""
    pooled: jax.Array = lax.reduce_window(jax.nn.relu(_conv(x, w, "NHWC")), -jnp.inf, lax.max, (1, 2, 2, 1),
                                          (1, 2, 2, 1), "VALID")  # fmt: skip
    return pooled


def _dilated(x: jax.Array, w: jax.Array, groups: int, k: int) -> jax.Array:
    """A depthwise convolution of ``x`` dilated by 2 (as JAX differentiates a stride-2 layer): 2× its size out."""
    pads = ((k // 2 + 1, k // 2), (k // 2 + 1, k // 2))
    spec = ("NHWC", "HWIO", "NHWC")
    return lax.conv_general_dilated(x, w, (1, 1), pads, lhs_dilation=(2, 2), dimension_numbers=spec,
                                    feature_group_count=groups)  # fmt: skip


#: The shared convolutions then JAX's own (batch, in channels, out channels, size, kernel); the
#: 2nd, 6th and 10th run NCHW, the others NHWC.
_CONVS = (*grid.CONVS, (8, 3, 32, 48, 3), (2, 32, 64, 28, 5), (1, 16, 16, 8, 3), (4, 32, 32, 16, 1),
          (8, 64, 128, 28, 3), (1, 128, 256, 14, 3), (16, 3, 64, 112, 7))  # fmt: skip
_NCHW = {1, 5, 9}


#: ``(batch, side, input channels, output channels, kernel side)`` of "same" convolutions whose input is
#: smaller than their window (a ResNet's last stage on 32–64-pixel images): XLA:CPU 0.10.2 runs them as
#: a lone ``convolution``, not a YNNPACK fusion, at 2–55 GFLOP/s here (``kernel_classes.GENERIC``).
_GENERIC_CONVS = ((4, 2, 256, 256, 3), (1, 2, 512, 512, 3), (4, 2, 512, 512, 3), (8, 2, 128, 128, 3),
                  (4, 4, 128, 128, 5), (16, 1, 256, 256, 3), (2, 3, 64, 64, 5), (8, 2, 64, 256, 3))  # fmt: skip


#: Strided 3-channel 3×3 stems, ``(batch, in, out, size, kernel, stride)``: ``conv:shallow`` in JAX
#: (``conv_views.STRIDED_STEM``), a MobileNet's and an EfficientNet's at 96² and 224², a small CNN's.
_STRIDED_STEMS = ((4, 3, 32, 96, 3, 2), (1, 3, 32, 224, 3, 2), (16, 3, 32, 32, 3, 2), (8, 3, 16, 64, 3, 2))
#: Small 1×1 layers on few positions, ``(batch, in, out, size, kernel)``: ``conv:small_map`` and ``conv:thin`` of
#: 0.3–1.9 MB of weights and 20–60 µs of roofline time, below the shared grid's smallest (``_microgrid.THIN_CONVS``),
#: where a MobileNet's and an EfficientNet's expand and project layers on their last maps lie (their neighbours are
#: timed, not those layers). On a 2-core VM they read 1.3–2.9× their bound, as the larger layers' curves had read
#: such layers; profiled alone, those layers had read 1.3–3.3× and then 1.9–4.8× their expectation ten minutes apart.
_FEW_POINTWISE = ((4, 128, 768, 3, 1), (4, 768, 128, 3, 1), (2, 1024, 192, 4, 1), (4, 96, 576, 5, 1),
                  (1, 192, 1152, 7, 1), (6, 256, 1024, 3, 1))  # fmt: skip


def _convs(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    convs = [("NCHW" if i in _NCHW else "NHWC", *conv, 1) for i, conv in enumerate(_CONVS)]
    if quick:  # NHWC ones
        convs = convs[::4]
    else:
        convs += [("NHWC", *conv, 1) for conv in (*grid.LARGE_CONVS, *grid.STEM_CONVS, *grid.THIN_CONVS)]
        convs += [("NHWC", *c) for c in (*grid.STRIDED_CONVS, *_STRIDED_STEMS)]
        convs += [("NHWC", *conv, 1) for conv in _FEW_POINTWISE]
    for layout, n, c_in, c_out, size, k, stride in convs:
        if layout == "NHWC":
            x, w = rand(n, size, size, c_in), rand(k, k, c_in, c_out, k=1)
        else:
            x, w = rand(n, c_in, size, size), rand(c_out, c_in, k, k, k=1)
        fn = _named(lambda x, w, layout=layout, s=stride: _conv(x, w, layout, s), "conv")
        strided = f" s{stride}" if stride > 1 else ""
        yield MicroProgram(f"conv {layout} {n}x{c_in}x{size}x{size}->{c_out} k{k}{strided}", fn, (x, w))
    for n, c_in, c_out, size, k in _CONVS[:: 7 if quick else 1] + (() if quick else grid.LARGE_CONVS + grid.STEM_CONVS):
        fn = _named(_pooled_conv, "conv")  # a CNN block, one ``ynn_fusion``: ``kernel_classes.POOLED``
        yield MicroProgram(f"conv+relu+max_pool NHWC {n}x{c_in}x{size}x{size}->{c_out} k{k}", fn,
                           (rand(n, size, size, c_in), rand(k, k, c_in, c_out, k=1)))  # fmt: skip
    for n, size, c_in, c_out, k in () if quick else _GENERIC_CONVS:
        fn = _named(lambda x, w: _conv(x, w, "NHWC"), "conv")  # ``kernel_classes.GENERIC``
        yield MicroProgram(f"conv NHWC {n}x{c_in}x{size}x{size}->{c_out} k{k} (under its window)", fn,
                           (rand(n, size, size, c_in), rand(k, k, c_in, c_out, k=1)))  # fmt: skip
    for n, c, size, k, stride in () if quick else grid.DEPTHWISE_CONVS:
        fn = _named(lambda x, w, s=stride, g=c: _conv(x, w, "NHWC", s, g), "conv")
        yield MicroProgram(f"conv depthwise NHWC {n}x{c}x{size}x{size} k{k} s{stride}", fn,
                           (rand(n, size, size, c), rand(k, k, 1, c, k=1)))  # fmt: skip
    for n, c, size, k in () if quick else grid.DILATED_DEPTHWISE_CONVS:  # a stride-2 layer's input gradient
        fn = _named(lambda x, w, g=c, k=k: _dilated(x, w, g, k), "conv")
        yield MicroProgram(f"conv depthwise input-dilated NHWC {n}x{c}x{size}x{size} k{k}", fn,
                           (rand(n, size, size, c), rand(k, k, 1, c, k=1)))  # fmt: skip


#: Filter gradients, ``(batch, side, in channels, out channels, kernel side, stride)`` of the layer differentiated
#: (``conv_views.GRAD_WEIGHT``), each after its layer's forward convolution (``_grad_weight``): eight of 16,384 rows or
#: more (batch × output positions: an MNIST or CIFAR CNN's first layers at batch 8–128), nine of 4,096–12,544 (three
#: of them 1×1), nine under 4,096 (wide layers on 7² to 28² maps at batch 2–16, three 1×1).
_GRAD_WEIGHTS = ((32, 32, 3, 16, 3, 1), (64, 16, 16, 32, 3, 1), (8, 56, 16, 16, 3, 1), (32, 28, 16, 32, 3, 1),
                 (8, 56, 16, 32, 3, 1), (128, 16, 16, 16, 3, 1), (64, 32, 8, 16, 3, 1), (16, 32, 32, 32, 3, 1),
                 (16, 28, 1, 32, 3, 1), (16, 28, 32, 32, 3, 1), (32, 16, 32, 64, 3, 1), (8, 32, 64, 64, 3, 1),
                 (16, 16, 64, 64, 3, 1), (16, 32, 32, 64, 3, 2), (8, 28, 64, 128, 1, 1), (16, 28, 32, 128, 1, 1),
                 (32, 14, 128, 64, 1, 1), (4, 7, 256, 256, 3, 1), (8, 14, 128, 128, 3, 1), (2, 28, 128, 128, 3, 1),
                 (4, 14, 256, 256, 3, 1), (16, 14, 32, 64, 3, 1), (4, 28, 64, 64, 3, 2), (8, 14, 64, 256, 1, 1),
                 (2, 14, 512, 512, 1, 1), (4, 14, 256, 1024, 1, 1))  # fmt: skip


def _grad_weight(x: jax.Array, w: jax.Array, stride: int) -> jax.Array:
    """The gradient in ``w`` of half the squared output of the layer (its output is its own output gradient): the
    forward convolution, then the filter gradient, which waits for it as in a training step. (Of a loss whose
    gradient needs no output, XLA drops the forward and rewrites the gradient's convolution without metadata; beside a
    forward nobody waits for, the two ran at once and each profiled at its share of the time they overlapped.)"""
    found: jax.Array = jax.grad(lambda w: 0.5 * jnp.sum(jnp.square(_conv(x, w, "NHWC", stride))))(w)
    return found


def _grad_weights(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    for n, side, c_in, c_out, k, stride in _GRAD_WEIGHTS[:: 9 if quick else 1]:
        fn = _named(lambda x, w, s=stride: _grad_weight(x, w, s), "conv_grad_weight")
        strided = f" s{stride}" if stride > 1 else ""
        yield MicroProgram(f"conv grad_weight NHWC {n}x{c_in}x{side}x{side}->{c_out} k{k}{strided}", fn,
                           (rand(n, side, side, c_in), rand(k, k, c_in, c_out, k=1)))  # fmt: skip


def _tail(x: jax.Array, *weights: jax.Array) -> jax.Array:
    """Bottleneck blocks (1×1, 3×3, 1×1 convolutions, each with a bias, a folded norm's scale and shift and a relu,
    the block's input added back) then a global mean and a dense head, as a ResNet ends: XLA:CPU fuses the blocks
    before the head into one YNNPACK fusion (``conv_views.CHAINED``)."""
    for i in range(0, len(weights) - 1, 12):
        w1, b1, s1, t1, w2, b2, s2, t2, w3, b3, s3, t3 = weights[i : i + 12]
        h = jax.nn.relu((_conv(x, w1, "NHWC") + b1) * s1 + t1)
        h = jax.nn.relu((_conv(h, w2, "NHWC") + b2) * s2 + t2)
        x = jax.nn.relu(x + (_conv(h, w3, "NHWC") + b3) * s3 + t3)
    head: jax.Array = jnp.mean(x, axis=(1, 2)) @ weights[-1]
    return head


#: ``(batch, side, channels, bottleneck channels)`` of two bottleneck blocks and a head (``_tail``), each one fusion
#: (``conv_views.CHAINED``; at 1 × 3² the first block's first layer stays out): six of fewer than 64 positions
#: (``conv:chained:few``: a ResNet50's last stage at batch 4 on 96-pixel images, 4 × 3², and at batch 1 on 224,
#: 1 × 7²), six of 64–144. None is a held-out model's.
_TAILS = ((4, 3, 2048, 512), (1, 7, 2048, 512), (2, 3, 2048, 512), (1, 3, 2048, 512), (4, 3, 1024, 256),
          (4, 3, 1536, 384), (8, 3, 512, 128), (2, 7, 1024, 256), (16, 3, 256, 64), (4, 4, 1024, 256),
          (8, 3, 1024, 256), (2, 7, 2048, 512))  # fmt: skip


def _tails(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    for n, side, c, mid in _TAILS[: 0 if quick else None]:
        weights = []
        for block in range(2):
            for k, c_in, c_out in ((1, c, mid), (3, mid, mid), (1, mid, c)):
                weights += [rand(k, k, c_in, c_out, k=1 + block), *(rand(c_out, k=i + 3 * block) for i in (1, 2, 3))]
        fn = _named(_tail, "tail")
        yield MicroProgram(f"tail NHWC {n}x{c}x{side}x{side} {c}->{mid}->{c} x2 + head", fn,
                           (rand(n, side, side, c), *weights, rand(c, 1000, k=1)))  # fmt: skip


#: Elementwise chains: each one loop fusion (one kernel) reading one or two arrays.
_CHAINS: dict[str, Callable[..., Any]] = {
    "relu": jax.nn.relu,
    "gelu": lambda x: 0.5 * x * (1.0 + jnp.tanh(0.7978845608 * (x + 0.044715 * x**3))),
    "tanh": jnp.tanh,
    "exp": jnp.exp,
    "add": jnp.add,
    "mul": jnp.multiply,
    "tanh(exp(x)+1)*x": lambda x: jnp.tanh(jnp.exp(x) + 1.0) * x,
    "relu(x*y+x)": lambda x, y: jax.nn.relu(x * y + x),
}
_BINARY = {"add", "mul", "relu(x*y+x)"}


def _elementwise(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    for name, size, shape in grid.pointwise(tuple(_CHAINS), ("relu", "gelu", "add"), quick):
        args = (rand(*shape), rand(*shape, k=1)) if name in _BINARY else (rand(*shape),)
        yield MicroProgram(f"{name} {size}", _named(_CHAINS[name], "elementwise"), args)


def _layer_norm(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5) * w + b


_REDUCTIONS: dict[str, Callable[..., Any]] = {
    "sum": lambda x: jnp.sum(x, axis=-1),
    "mean": lambda x: jnp.mean(x, axis=-1),
    "max": lambda x: jnp.max(x, axis=-1),
    "softmax": lambda x: jax.nn.softmax(x, axis=-1),
}


def _reductions(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    for shape, names in grid.reductions(tuple(_REDUCTIONS), quick):
        for name in names:
            yield MicroProgram(f"{name} {shape}", _named(_REDUCTIONS[name], name), (rand(*shape),))
        width, fn = shape[1], _named(_layer_norm, "layer_norm")
        yield MicroProgram(f"layer_norm {shape}", fn, (rand(*shape), rand(width, k=1), rand(width, k=2)))


#: Pooling windows in NHWC: max 3×3 stride 2 (as a CNN's stem), average 2×2 stride 2.
_POOLS: dict[str, Callable[..., Any]] = {
    "max_pool": lambda t: lax.reduce_window(t, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
    "avg_pool 2x2": lambda t: lax.reduce_window(t, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4,
    "global avg_pool": lambda t: jnp.mean(t, axis=(1, 2)),
}


#: A 2×2 max pool of stride 2's input gradient, ``(batch, side, channels)`` of its input (64 kB–8 MB): XLA:CPU expands
#: it into index arrays, a reduce-window of each window's max and position (``core.kernels.VARIADIC_WINDOW``) and a
#: scatter-add that holds its record, both ``pool_backward``.
_POOL_GRADS = ((4, 16, 32), (8, 32, 32), (16, 16, 64), (16, 32, 64), (8, 56, 64), (64, 8, 128), (2, 112, 32))


def _max_pool_grad(x: jax.Array) -> jax.Array:
    """The gradient of half the squared 2×2 max pool of stride 2 of ``x`` (its output is its own output gradient)."""

    def loss(x: jax.Array) -> jax.Array:
        pooled = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return 0.5 * jnp.sum(jnp.square(pooled))

    found: jax.Array = jax.grad(loss)(x)
    return found


#: Small scatters and gathers (table rows, width, rows written or read): a tree search's or an
#: environment's state updates, where the embedding lookups (8,192-row tables) are all large —
#: XLA:CPU partitions those over the cores (31 µs at the quickest on a 2-core VM), and an mctx
#: search's scatters of 80 B–2.7 kB, read off them, ran at about 1 µs.
_SCATTERS = ((64, 8, 8), (256, 16, 32), (2048, 64, 128), (8192, 128, 1024), (512, 4, 64))
#: One element a row ``(batch, nodes)``, as a batched tree search updates a node's statistics.
_NODE_UPDATES = ((8, 33), (64, 129), (256, 1025))


def _memory(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    for size in grid.sizes(quick):
        rows, width = grid.transpose_shape(size)
        yield MicroProgram(f"transpose {rows}x{width}", _named(lambda x: x.T, "transpose"), (rand(rows, width),))
        if not quick:  # a head split: (batch·seq, heads, dim) → (heads, batch·seq, dim)
            shape = grid.head_split(size)
            fn = _named(lambda x: jnp.transpose(x, (1, 0, 2)), "transpose")
            yield MicroProgram(f"transpose (1,0,2) {shape}", fn, (rand(*shape),))
    for tokens, dim in grid.embeddings(quick):
        ids = rand.ids(tokens, 8192)
        fn = _named(lambda table, ids: jnp.take(table, ids, axis=0), "embedding")
        yield MicroProgram(f"embedding {tokens}x{dim}", fn, (rand(8192, dim), ids))
    for rows, dim, count in _SCATTERS[: 1 if quick else None]:
        table, ids = rand(rows, dim), rand.ids(count, rows)
        fn = _named(lambda table, ids, values: table.at[ids].set(values), "scatter")
        yield MicroProgram(f"scatter {count} rows of {rows}x{dim}", fn, (table, ids, rand(count, dim, k=1)))
        fn = _named(lambda table, ids: jnp.take(table, ids, axis=0), "take")
        yield MicroProgram(f"take {count} rows of {rows}x{dim}", fn, (table, ids))
    for batch, nodes in () if quick else _NODE_UPDATES:
        fn = _named(lambda x, ids, v: x.at[jnp.arange(x.shape[0]), ids].set(v), "scatter")
        yield MicroProgram(f"scatter a node per row {batch}x{nodes}", fn,
                           (rand(batch, nodes), rand.ids(batch, nodes), rand(batch, k=1)))  # fmt: skip
    for n, hw, c in grid.POOL_MAPS[: 2 if quick else None]:
        x = rand(n, hw, hw, c)
        for name, pool in _POOLS.items():
            yield MicroProgram(f"{name} {n}x{hw}x{hw}x{c}", _named(pool, name.split()[-1]), (x,))
    for n, hw, c in _POOL_GRADS[: 1 if quick else None]:
        yield MicroProgram(f"max_pool 2x2 backward {n}x{hw}x{hw}x{c}", _named(_max_pool_grad, "max_pool_grad"),
                           (rand(n, hw, hw, c),))  # fmt: skip


def _rnn(xs: jax.Array, h: jax.Array, wx: jax.Array, wh: jax.Array) -> jax.Array:
    """A tanh cell scanned over ``xs``, its weights loop-invariant (read by every step, never in the
    loop state: carried, XLA sliced them anew each step, copies no recurrent layer makes)."""

    def step(h: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        h = jnp.tanh(x @ wx + h @ wh)
        return h, h

    return lax.scan(step, h, xs)[1]


_SHORTER = grid.SHORTER


def _mlp_loop(steps: int) -> Callable[..., Any]:
    """A residual ReLU layer applied ``steps`` times in a ``fori_loop`` (a fresh function object)."""
    return _named(lambda h, w: lax.fori_loop(0, steps, lambda i, h: h + jax.nn.relu(h @ w) * 0.5, h), "loop")


#: Loop bodies, ``(batch, steps, features, hidden)`` of a scanned tanh cell: a compiled loop's kernels
#: run back to back in one launch (their own classes, ``@loop``). Hidden widths reach 1,024 (the
#: grid stopped at 256: a 512-wide cell's dots were read off the curve's last segment); the cells
#: wider than 256 span weights of 1.1–6 MiB, each side of two 1 MiB L2s (``analysis/loop_dots.py``).
_SCANS = ((4, 64, 32, 64), (16, 32, 64, 128), (32, 64, 128, 256), (1, 256, 16, 32), (2, 128, 32, 64),
          (8, 64, 64, 64), (4, 128, 64, 128), (64, 16, 64, 64), (8, 32, 256, 256),
          (2, 32, 128, 512), (32, 16, 512, 512), (8, 16, 512, 1024), (4, 32, 384, 384),
          (16, 16, 256, 768), (12, 32, 384, 512), (24, 16, 320, 448), (6, 32, 448, 448), (48, 16, 384, 384),
          (24, 16, 256, 640), (6, 32, 512, 768))  # fmt: skip
#: The quick grid's second scan, the loop drift probe (``calibration_history.is_loop``): a 512-wide cell, as
#: the held-out scan's. On an Intel VM its hidden dot read 12.3 and 25.6 µs a step in two calibrations 12
#: minutes apart, where the 384-wide cell's (the probe before) read 7.3 and 7.9 µs, and in a benchmark run
#: that probe read 0.98× while the held-out 512-wide scan ran 2.9× its expected time. On an AMD VM the
#: 384-wide cell had moved 2.7× with the host, as the held-out scan did.
PROBE_SCAN = (2, 32, 128, 512)


def _attention_scan(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    for b, s, h, d in grid.ATTENTION[: 2 if quick else None]:
        q, k, v = rand(b, s, h, d), rand(b, s, h, d, k=1), rand(b, s, h, d, k=2)
        for causal in (False, True) if not quick else (False,):
            fn = _named(lambda q, k, v, c=causal: jax.nn.dot_product_attention(q, k, v, is_causal=c), "attention")
            yield MicroProgram(f"attention {b}x{s}x{h}x{d}{' causal' if causal else ''}", fn, (q, k, v))
    for batch, steps, features, hidden in (_SCANS[0], PROBE_SCAN) if quick else _SCANS:
        wx, wh, h0 = rand(features, hidden, k=1), rand(hidden, hidden, k=3), rand(batch, hidden, k=2)
        few = steps // _SHORTER
        short = MicroProgram("", _named(_rnn, "scan"), (rand(few, batch, features), h0, wx, wh), trips=few)
        yield MicroProgram(f"scan {batch}x{steps}x{features}->{hidden}", _named(_rnn, "scan"),
                           (rand(steps, batch, features), h0, wx, wh), trips=steps, shorter=short)  # fmt: skip
    for batch, steps, width in ((4, 64, 64), (16, 32, 128), (64, 16, 256), (1, 256, 32))[: 0 if quick else None]:
        args = (rand(batch, width), rand(width, width, k=1))
        short = MicroProgram("", _mlp_loop(steps // _SHORTER), args, trips=steps // _SHORTER)
        yield MicroProgram(
            f"fori_loop mlp {batch}x{width} x{steps}", _mlp_loop(steps), args, trips=steps, shorter=short
        )


def _gates(xs: jax.Array, h: jax.Array) -> jax.Array:
    """A GRU's gates scanned over its precomputed input projections (``xs``: steps × batch × 3
    hidden, as Keras's GRU computes them before its loop), each step's row read through three
    slices: one loop fusion a step (``kernel_classes.SLICED``), no contraction."""

    def step(h: jax.Array, x: jax.Array) -> tuple[jax.Array, None]:
        xz, xr, xn = jnp.split(x, 3, axis=-1)
        z, r = jax.nn.sigmoid(xz + h), jax.nn.sigmoid(xr + h)
        return z * h + (1 - z) * jnp.tanh(xn + r * h), None

    return lax.scan(step, h, xs)[0]


def _affine(xs: jax.Array, h: jax.Array) -> jax.Array:
    """``h ← h·a + b`` scanned over ``xs`` (steps × batch × 2 widths), ``a`` and ``b`` its row's two
    slices: the pointwise kind of ``_gates``, without a function."""
    return lax.scan(lambda h, x: (h * x[..., : h.shape[-1]] + x[..., h.shape[-1] :], None), h, xs)[0]


#: ``(batch, hidden, steps)`` of the gate loops (``_gates``; the first three also ``_affine``'s).
_GATES = ((8, 64, 64), (16, 512, 16), (64, 256, 16), (8, 256, 32), (32, 128, 32), (1, 128, 64))


def _gate_loops(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    for index, (batch, hidden, steps) in enumerate(_GATES[: 0 if quick else None]):
        h, few = rand(batch, hidden), steps // _SHORTER
        for name, fn, width in (("gates", _gates, 3), ("affine", _affine, 2))[: 2 if index < 3 else 1]:
            short = MicroProgram("", _named(fn, name), (rand(few, batch, width * hidden, k=1), h), trips=few)
            yield MicroProgram(f"{name} {batch}x{hidden} x{steps}", _named(fn, name),
                               (rand(steps, batch, width * hidden, k=1), h), trips=steps, shorter=short)  # fmt: skip


def _draws(keys: jax.Array, acc: jax.Array) -> jax.Array:
    """Random numbers drawn in a scan, as an RL rollout or a tree search draws them each step:
    XLA:CPU runs each draw's threefry rounds as a loop of its own, dozens of tiny kernels a step
    that run none of the records (a loop body of the kind ``_loop_times`` reads off the wall)."""

    def step(acc: jax.Array, key: jax.Array) -> tuple[jax.Array, None]:
        k1, k2 = jax.random.split(key)
        u = jax.random.uniform(k1, acc.shape)
        return acc * 0.5 + jnp.where(u > 0.5, u, -u) + jax.random.normal(k2, acc.shape), None

    return lax.scan(step, acc, keys)[0]


def _rng_loops(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    keys = jax.random.split(jax.random.PRNGKey(0), _DRAW_STEPS)
    for batch in _DRAW_BATCHES[: 0 if quick else None]:
        acc, few = rand(batch), _DRAW_STEPS // _SHORTER
        short = MicroProgram("", _named(_draws, "draws"), (keys[:few], acc), trips=few)
        yield MicroProgram(f"draws {batch} x{_DRAW_STEPS}", _named(_draws, "draws"), (keys, acc),
                           trips=_DRAW_STEPS, shorter=short)  # fmt: skip


#: Draws a step (``_draws``) of these many numbers, over this many steps.
_DRAW_BATCHES, _DRAW_STEPS = (1, 64, 1024), 64


def jax_microbenchmarks(quick: bool = False) -> list[MicroProgram]:
    """Every micro-program of the JAX calibration (the module docstring)."""
    rand = _Inputs(jax.device_put)
    programs: list[MicroProgram] = []
    for family in (
        _dots,
        generic_dots,
        _convs,
        _grad_weights,
        _tails,
        _elementwise,
        transposed_pointwise,
        _reductions,
        _memory,
        _attention_scan,
        _gate_loops,
        _rng_loops,
    ):
        programs += family(rand, quick)
    return programs
