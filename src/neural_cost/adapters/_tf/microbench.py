"""The kernel calibration's micro-programs for TensorFlow: small tf.functions of graph ops.

Each graph op that does work is one kernel (``_tf/kernels.py``), timed from ``tf.profiler``
(``TensorFlowAdapter.profile``); every kernel of a program is a point. The grid spans the ops a
Keras model runs, from a few microseconds to tens of milliseconds on a small CPU: ``MatMul``
over rows 1..4096 and widths 32..3072 (alone and with ``BiasAdd``), ``BatchMatMulV2``,
``Conv2D`` (NHWC), pointwise ops from 10³ to 10⁷ elements, ``Sum``/``Mean``/``Max`` over the
last axis, ``Softmax``, ``FusedBatchNormV3`` for inference, ``MaxPool``/``AvgPool``,
``Transpose``, ``GatherV2`` (an embedding lookup), a Keras ``Dense`` and ``Conv2D`` layer
call, and Keras models of one ``BatchNormalization`` or ``LayerNormalization`` layer (the kernel
the adapter folds each into); and loops (``_loops``): an LSTM-style cell and a residual ReLU layer in a
``tf.while_loop``, whose ops run once a step (their classes ``@loop``), each with a twin at an
eighth of its steps. Inputs are fixed random tensors; ``quick`` keeps every class at a few sizes
(for tests). Every program is a tf.function of its own (a norm layer's, its Keras model). Then
``jit_compile`` functions (``_xla``): XLA's
fusions, dots and convolutions, whose kernels are classes of their own (``matmul@xla``: a
TensorFlow function compiled by XLA does not run the graph ops the rest of the grid times), and
depthwise convolutions, which XLA:CPU runs 5–60 times slower than the graph op.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import tensorflow as tf

from .. import _microgrid as grid
from ..base import MicroProgram

_Inputs = grid.Inputs[tf.Tensor]


def _program(name: str, fn: Callable[..., Any], *args: Any) -> MicroProgram:
    return MicroProgram(name, tf.function(fn), tuple(args))


def _matmuls(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    for ij, m, k, n in grid.dots(quick):
        if ij % 2:
            yield _program(
                f"MatMul+BiasAdd {m}x{k}x{n}",
                lambda x, w, b: tf.nn.bias_add(tf.matmul(x, w), b),
                rand(m, k),
                rand(k, n, k=1),
                rand(n, k=2),
            )
        else:
            yield _program(f"MatMul {m}x{k}x{n}", lambda x, w: tf.matmul(x, w), rand(m, k), rand(k, n, k=1))
    for batch, m, k, n in grid.batched_dots(quick):
        yield _program(
            f"BatchMatMulV2 {batch}x{m}x{k}x{n}",
            lambda a, b: tf.matmul(a, b),
            rand(batch, m, k),
            rand(batch, k, n, k=1),
        )


#: 1×1 convolutions of stride 1 and fewer than 256 output positions (batch, in channels, out channels, size, kernel):
#: ``conv:thin:1x1`` on 5² to 14² maps, 98–200 rows, 0.26–8.4 MB of weights; then ``conv:small_map:1x1`` on 2² to 4²,
#: 32–144 rows, 0.6–9.4 MB (``conv_views.ONE_BY_ONE``), beside the shared grid's five. None is a held-out model's, nor a
#: Keras Xception's or ResNet50's.
_THIN_POINTWISE = ((2, 768, 768, 7, 1), (4, 384, 1536, 6, 1), (1, 512, 512, 12, 1), (4, 2048, 1024, 5, 1),
                   (8, 320, 320, 5, 1), (1, 1536, 384, 14, 1), (2, 128, 512, 8, 1),
                   (4, 1536, 1536, 3, 1), (2, 640, 2560, 4, 1), (8, 1024, 256, 2, 1), (16, 384, 384, 3, 1),
                   (6, 2048, 512, 4, 1))  # fmt: skip
#: The shared convolutions then TensorFlow's own (batch, in channels, out channels, size, kernel).
_CONVS = (
    *grid.CONVS,
    (1, 16, 16, 8, 3),
    (8, 64, 128, 28, 3),
    (1, 128, 256, 14, 3),
    (2, 32, 64, 28, 5),
    *grid.LARGE_CONVS,
    *grid.STEM_CONVS,
    *grid.THIN_CONVS,
    *_THIN_POINTWISE,
)


def _convs(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    convs = [(*conv, 1) for conv in _CONVS[: 3 if quick else None]] + ([] if quick else list(grid.STRIDED_CONVS))
    for n, c_in, c_out, size, k, stride in convs:
        yield _program(f"Conv2D {n}x{size}x{size}x{c_in}->{c_out} k{k}" + (f" s{stride}" if stride > 1 else ""),
                       lambda x, w, s=stride: tf.nn.conv2d(x, w, s, "SAME"),
                       rand(n, size, size, c_in), rand(k, k, c_in, c_out, k=1))  # fmt: skip
    for n, c, size, k, stride in () if quick else grid.DEPTHWISE_CONVS:
        yield _program(f"DepthwiseConv2dNative {n}x{size}x{size}x{c} k{k} s{stride}",
                       lambda x, w, s=stride: tf.nn.depthwise_conv2d(x, w, (1, s, s, 1), "SAME"),
                       rand(n, size, size, c), rand(k, k, c, 1, k=1))  # fmt: skip
    for n, c_in, c_out, size in ((2, 16, 32, 32), (4, 64, 64, 16), (1, 32, 64, 56))[: 1 if quick else None]:
        layer = tf.keras.layers.Conv2D(c_out, 3, padding="same", activation="relu")
        layer.build((n, size, size, c_in))
        yield _program(f"keras Conv2D {n}x{size}x{size}x{c_in}->{c_out}", lambda x, layer=layer: layer(x),
                       rand(n, size, size, c_in))  # fmt: skip
    for batch, features, units in ((16, 256, 256), (256, 512, 1024), (1024, 768, 768))[: 1 if quick else None]:
        dense = tf.keras.layers.Dense(units, activation="gelu")
        dense.build((batch, features))
        yield _program(f"keras Dense {batch}x{features}->{units}", lambda x, layer=dense: layer(x),
                       rand(batch, features))  # fmt: skip


_POINTWISE: dict[str, Callable[..., Any]] = {
    "Relu": tf.nn.relu,
    "Tanh": tf.tanh,
    "Exp": tf.exp,
    "Sigmoid": tf.sigmoid,
    "Gelu": tf.nn.gelu,
    "AddV2": tf.add,
    "Mul": tf.multiply,
}
_BINARY = {"AddV2", "Mul"}


def _pointwise(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    for name, size, shape in grid.pointwise(tuple(_POINTWISE), ("Relu", "AddV2", "Tanh"), quick):
        op = _POINTWISE[name]
        if name in _BINARY:
            yield _program(f"{name} {size}", lambda x, y, op=op: op(x, y), rand(*shape), rand(*shape, k=1))
        else:
            yield _program(f"{name} {size}", lambda x, op=op: op(x), rand(*shape))
    # the same ops on a multiply's result, which they may write over (``core.kernels.FORWARDS_INPUT``), as an
    # activation's op does in a graph: ``elementwise:forwarded`` (a Relu over 8.4 MB: 380 µs, on its own input 742)
    for name, size, shape in () if quick else grid.pointwise(("Relu", "AddV2"), (), quick):
        op = _POINTWISE[name]
        if name in _BINARY:
            yield _program(
                f"{name} forwarded {size}", lambda x, y, op=op: op(x * 1.5, y), rand(*shape), rand(*shape, k=1)
            )
        else:
            yield _program(f"{name} forwarded {size}", lambda x, op=op: op(x * 1.5), rand(*shape))


#: Feature maps (batch, height = width, channels) for norms and pools.
_MAPS = ((1, 16, 16), (4, 32, 64), (8, 56, 64), (16, 28, 128), (2, 112, 32), (32, 14, 256), (1, 224, 3),
         (4, 56, 64), (1, 32, 16), (8, 112, 64), (2, 64, 32), (16, 7, 512))  # fmt: skip


_REDUCTIONS: dict[str, Callable[..., Any]] = {
    "Sum": lambda x: tf.reduce_sum(x, axis=-1),
    "Mean": lambda x: tf.reduce_mean(x, axis=-1),
    "Max": lambda x: tf.reduce_max(x, axis=-1),
    "Softmax": lambda x: tf.nn.softmax(x, axis=-1),
}


def _reductions_norms(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    for shape, names in grid.reductions(tuple(_REDUCTIONS), quick):
        for name in names:
            yield _program(f"{name} {shape}", _REDUCTIONS[name], rand(*shape))
    for n, hw, c in _MAPS[: 2 if quick else None]:
        mean, var = rand(c, k=3), tf.abs(rand(c, k=4)) + 0.5
        yield _program(
            f"FusedBatchNormV3 {n}x{hw}x{hw}x{c}",
            lambda x, s, o, m, v: tf.compat.v1.nn.fused_batch_norm(x, s, o, m, v, is_training=False)[0],
            rand(n, hw, hw, c), rand(c, k=1), rand(c, k=2), mean, var,
        )  # fmt: skip
    # Keras 3's layers, as a model runs them (its adapter folds each into one kernel, ``_tf/composites.py``): a batch
    # norm is a multiply and an add over the map, not the fused op (``norm:batch:keras``), and a layer norm its
    # moments and four passes (``norm:layer``; TensorFlow has no op of its own for one)
    for n, hw, c in () if quick else _KERAS_MAPS:
        yield MicroProgram(f"keras BatchNormalization {n}x{hw}x{hw}x{c}", _keras_norm(
            tf.keras.layers.BatchNormalization(), (n, hw, hw, c)), (rand(n, hw, hw, c),))  # fmt: skip
    for rows, width in () if quick else (*grid.LAYER_NORM_ROWS, *_LAYER_NORMS):
        yield MicroProgram(f"keras LayerNormalization {rows}x{width}", _keras_norm(
            tf.keras.layers.LayerNormalization(), (rows, width)), (rand(rows, width),))  # fmt: skip


#: The maps of ``_MAPS`` a Keras batch norm is timed on: one of each size (16 kB to 26 MB), the 3-channel stem's left
#: out (a Keras model is about 0.7 s of a calibration's pass to trace and profile; TensorFlow's is held under 3 min).
_KERAS_MAPS = tuple(m for m in _MAPS if m not in ((16, 28, 128), (32, 14, 256), (2, 112, 32), (2, 64, 32), (1, 224, 3)))
#: Layer norms (rows × width) TensorFlow's grid times beside ``grid.LAYER_NORM_ROWS``: 0.4–0.5 MB, between their 64 kB
#: and 1.5 MB. Keras's layer is eleven graph ops whose time grows with the elements, where the roofline jumps as a
#: layer's footprint leaves the L2 (512 rows of 256: 5.3 µs of roofline; 512 × 768: 58 µs); without them a Keras
#: transformer's 512 × 256 layer norms were expected at 311 µs and ran 590–670 (the machine 1.38× slow).
_LAYER_NORMS = ((512, 256), (128, 768), (256, 384))


def _keras_norm(layer: Any, shape: tuple[int, ...]) -> Any:
    """A Keras model of one norm ``layer`` over inputs of ``shape`` after a ReLU, its statistics and parameters not
    0 or 1: it normalizes an intermediate, as in a model, whose buffer its first op may write over (a product by a
    constant, Grappler folds into the layer's own)."""
    inputs = tf.keras.Input(shape[1:], batch_size=shape[0])
    model = tf.keras.Model(inputs, layer(tf.keras.layers.ReLU()(inputs)))
    for i, weight in enumerate(layer.weights):  # γ, β (and a batch norm's moving mean and variance: positive)
        weight.assign(tf.abs(tf.random.stateless_normal(weight.shape, seed=(i, 7))) + 0.5)
    return model


def _memory(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    for size in grid.sizes(quick):
        rows, width = grid.transpose_shape(size)
        yield _program(f"Transpose {rows}x{width}", lambda x: tf.transpose(x), rand(rows, width))
        if not quick:  # a head split: (batch·seq, heads, dim) → (heads, batch·seq, dim)
            shape = grid.head_split(size)
            yield _program(f"Transpose (1,0,2) {shape}", lambda x: tf.transpose(x, (1, 0, 2)), rand(*shape))
    for tokens, dim in grid.embeddings(quick):
        yield _program(f"GatherV2 {tokens}x{dim}", lambda table, ids: tf.gather(table, ids),
                       rand(8192, dim), rand.ids(tokens, 8192))  # fmt: skip
    for n, hw, c in _MAPS[: 2 if quick else 8]:
        x = rand(n, hw, hw, c)
        yield _program(f"MaxPool {n}x{hw}x{hw}x{c}", lambda t: tf.nn.max_pool2d(t, 3, 2, "SAME"), x)
        yield _program(f"AvgPool {n}x{hw}x{hw}x{c}", lambda t: tf.nn.avg_pool2d(t, 2, 2, "VALID"), x)


_SHORTER = grid.SHORTER
#: LSTM-style cells ``(batch, steps, features, hidden)`` in a ``tf.while_loop``, as a Keras ``LSTM``
#: layer runs them: its ops run once a step through TensorFlow's executor (2–3 µs an op on a
#: 2-core VM, under a µs of it in the op's own event), none of which a standalone program's
#: curve knows (a Keras LSTM + GRU's loop ops read at 2× their run).
_CELLS = ((1, 64, 16, 32), (4, 64, 32, 64), (8, 32, 64, 128), (32, 32, 64, 128), (2, 64, 64, 64),
          (16, 32, 128, 256), (64, 16, 128, 128), (8, 32, 256, 512))  # fmt: skip
#: Residual ReLU layers ``(batch, width, steps)`` in a ``tf.while_loop``.
_LAYER_LOOPS = ((1, 32, 64), (4, 64, 64), (16, 128, 32), (64, 256, 16))


def _cell_loop(steps: int) -> Callable[..., Any]:
    """An LSTM-style cell run ``steps`` times in a ``tf.while_loop``, its inputs read from and its
    outputs written to tensor lists, as Keras runs its recurrent layers."""

    def cell(xs: Any, h: Any, c: Any, wx: Any, wh: Any, b: Any) -> Any:
        inputs = tf.TensorArray(tf.float32, size=steps).unstack(xs)
        outputs = tf.TensorArray(tf.float32, size=steps)

        def body(i: Any, h: Any, c: Any, outputs: Any) -> tuple[Any, ...]:
            z = tf.nn.bias_add(tf.matmul(inputs.read(i), wx) + tf.matmul(h, wh), b)
            gate_in, gate_forget, candidate, gate_out = tf.split(z, 4, axis=1)
            c = tf.sigmoid(gate_forget) * c + tf.sigmoid(gate_in) * tf.tanh(candidate)
            h = tf.sigmoid(gate_out) * tf.tanh(c)
            return i + 1, h, c, outputs.write(i, h)

        return tf.while_loop(lambda i, *_: i < steps, body, (tf.constant(0), h, c, outputs))[3].stack()

    return cell


def _layer_loop(steps: int) -> Callable[..., Any]:
    """A residual ReLU layer applied ``steps`` times in a ``tf.while_loop``."""

    def layers(h: Any, w: Any) -> Any:
        def body(i: Any, h: Any) -> tuple[Any, Any]:
            return i + 1, h + tf.nn.relu(tf.matmul(h, w)) * 0.5

        return tf.while_loop(lambda i, _: i < steps, body, (tf.constant(0), h))[1]

    return layers


def _loops(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    """Loop programs, each with its twin at ``steps // _SHORTER`` (a tf.function of its own)."""
    for batch, steps, features, hidden in _CELLS[: 1 if quick else None]:
        state = (rand(batch, hidden, k=1), rand(batch, hidden, k=2), rand(features, 4 * hidden, k=3),
                 rand(hidden, 4 * hidden, k=4), rand(4 * hidden, k=5))  # fmt: skip
        few = steps // _SHORTER
        short = MicroProgram("", tf.function(_cell_loop(few)), (rand(few, batch, features), *state), trips=few)
        yield MicroProgram(f"while cell {batch}x{steps}x{features}->{hidden}", tf.function(_cell_loop(steps)),
                           (rand(steps, batch, features), *state), trips=steps, shorter=short)  # fmt: skip
    for batch, width, steps in () if quick else _LAYER_LOOPS:
        args = (rand(batch, width), rand(width, width, k=1))
        short = MicroProgram("", tf.function(_layer_loop(steps // _SHORTER)), args, trips=steps // _SHORTER)
        yield MicroProgram(f"while relu layer {batch}x{width} x{steps}", tf.function(_layer_loop(steps)), args,
                           trips=steps, shorter=short)  # fmt: skip


def _xla_program(name: str, fn: Callable[..., Any], *args: Any) -> MicroProgram:
    return MicroProgram(f"xla {name}", tf.function(fn, jit_compile=True), tuple(args))


def _xla(rand: _Inputs, quick: bool) -> Iterator[MicroProgram]:
    """``jit_compile`` functions: XLA's kernels of each kind (classes ``@xla``), a sparser grid
    than the graph ops' (every other dot shape, the shared convolutions, three pointwise chains,
    sums and softmaxes at width 1024, inference batch norms and max pools on a few maps)."""
    for ij, m, k, n in grid.dots(quick):
        if quick or ij % 2 == 0:
            yield _xla_program(f"dot+bias+relu {m}x{k}x{n}", lambda x, w, b: tf.nn.relu(tf.matmul(x, w) + b),
                               rand(m, k), rand(k, n, k=1), rand(n, k=2))  # fmt: skip
    for n, c_in, c_out, size, k in grid.CONVS[: 2 if quick else None]:
        yield _xla_program(f"Conv2D+Relu {n}x{size}x{size}x{c_in}->{c_out} k{k}",
                           lambda x, w: tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME")),
                           rand(n, size, size, c_in), rand(k, k, c_in, c_out, k=1))  # fmt: skip
    for n, c, size, k, stride in () if quick else grid.XLA_DEPTHWISE_CONVS:  # its generic emitter's, not Eigen's
        yield _xla_program(f"DepthwiseConv2dNative {n}x{size}x{size}x{c} k{k} s{stride}", _depthwise(stride),
                           rand(n, size, size, c), rand(k, k, c, 1, k=1))  # fmt: skip
    for n, c, size, k in () if quick else grid.DILATED_DEPTHWISE_CONVS:  # a stride-2 layer's input gradient
        yield _xla_program(f"DepthwiseConv2dNativeBackpropInput {n}x{size}x{size}x{c} k{k} s2",
                           _depthwise_input_gradient((n, 2 * size, 2 * size, c)),
                           rand(n, size, size, c), rand(k, k, c, 1, k=1))  # fmt: skip
    for size in grid.sizes(quick):
        shape = grid.flat_shape(size)
        yield _xla_program(f"x*2+1 {size}", _scale_shift, rand(*shape))
        yield _xla_program(f"x+y {size}", _add, rand(*shape), rand(*shape, k=1))
        yield _xla_program(f"tanh(x)*y {size}", _tanh_mul, rand(*shape), rand(*shape, k=1))
        rows = grid.rows_of(size, 1024)
        yield _xla_program(f"Sum {rows}", _row_sum, rand(*rows))
        yield _xla_program(f"Softmax {rows}", _row_softmax, rand(*rows))
    for n, hw, c in _MAPS[: 2 if quick else 8]:
        x, moments = rand(n, hw, hw, c), (rand(c, k=1), rand(c, k=2), rand(c, k=3), tf.abs(rand(c, k=4)) + 0.5)
        yield _xla_program(f"FusedBatchNormV3+Relu {n}x{hw}x{hw}x{c}", _norm_relu, x, *moments)
        yield _xla_program(f"MaxPool {n}x{hw}x{hw}x{c}", lambda t: tf.nn.max_pool2d(t, 3, 2, "SAME"), x)


# Named functions, not lambdas: autograph reads a function's source, and two lambdas of one
# signature on one line are ambiguous to it (it warns and leaves them unconverted).
def _depthwise(stride: int) -> Callable[[Any, Any], Any]:
    """A depthwise convolution of ``stride`` with no argument beyond its tensors: XLA's compiler IR
    of a function with a Python default argument cannot be had (TensorFlow 2.21 reads every
    argument's shape)."""

    def depthwise(x: Any, w: Any) -> Any:
        return tf.nn.depthwise_conv2d(x, w, (1, stride, stride, 1), "SAME")

    return depthwise


def _depthwise_input_gradient(input_shape: tuple[int, ...]) -> Callable[[Any, Any], Any]:
    """The input gradient of a stride-2 depthwise layer whose input is ``input_shape``."""

    def gradient(out_backprop: Any, w: Any) -> Any:
        return tf.nn.depthwise_conv2d_backprop_input(list(input_shape), w, out_backprop, (1, 2, 2, 1), "SAME")

    return gradient


def _scale_shift(x: Any) -> Any:
    return x * 2.0 + 1.0


def _add(x: Any, y: Any) -> Any:
    return x + y


def _tanh_mul(x: Any, y: Any) -> Any:
    return tf.tanh(x) * y


def _row_sum(x: Any) -> Any:
    return tf.reduce_sum(x, axis=-1)


def _row_softmax(x: Any) -> Any:
    return tf.nn.softmax(x, axis=-1)


def _norm_relu(x: Any, scale: Any, offset: Any, mean: Any, variance: Any) -> Any:
    return tf.nn.relu(tf.compat.v1.nn.fused_batch_norm(x, scale, offset, mean, variance, is_training=False)[0])


def tf_microbenchmarks(quick: bool = False) -> list[MicroProgram]:
    """Every micro-program of the TensorFlow calibration (the module docstring)."""
    rand = _Inputs(tf.constant)
    programs: list[MicroProgram] = []
    for family in (_matmuls, _convs, _pointwise, _reductions_norms, _memory, _loops, _xla):
        programs += family(rand, quick)
    return programs
