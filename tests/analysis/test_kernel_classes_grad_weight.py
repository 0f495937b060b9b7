"""JAX filter gradients as their own class (``conv_views.GRAD_WEIGHT``): ``conv_backward:grad_weight``, ``:deep``
for a contraction of ``DEEP_ROWS`` rows or more, read off real JAX traces; PyTorch's and TensorFlow's gradients
keep their classes; the fallbacks without a curve of their own."""

from __future__ import annotations

import pytest

from neural_cost import estimate_trace
from neural_cost.analysis.conv_views import DEEP_ROWS, DEEPER_ROWS
from neural_cost.analysis.expected import expected_time
from neural_cost.analysis.kernel_classes import borrowed_class, kernel_class
from neural_cost.analysis.kernels import kernel_rows
from neural_cost.hardware.kernel_model import Point, family, fit_calibration
from tests.analysis.test_kernel_bound import SPEC
from tests.analysis.test_kernel_classes import _calibration, _flat

jax = pytest.importorskip("jax")


def _jax_classes(fn, *args):
    from neural_cost.adapters import adapter_for

    estimate = estimate_trace(adapter_for("jax", cross_check=True).trace(jax.jit(fn), args))
    return sorted(kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0] if row.index is not None)


def _layer(batch, side, c_in, c_out, k, stride=1):
    """A "same" NHWC layer's input, weight and an output gradient of its output's shape (side ÷ stride, rounded up)."""
    jnp = jax.numpy
    out = -(-side // stride)
    return jnp.ones((batch, side, side, c_in)), jnp.ones((k, k, c_in, c_out)), jnp.ones((batch, out, out, c_out))


def _conv(x, w, stride=1):
    spec = ("NHWC", "HWIO", "NHWC")
    return jax.lax.conv_general_dilated(x, w, (stride, stride), "SAME", dimension_numbers=spec)


def _with_grad_weight(x, w, g, stride=1):
    """The layer's output and its filter gradient for the output gradient ``g``, as a training step computes both
    (without the output, XLA drops the forward and the gradient's kernel loses its metadata)."""
    y, pullback = jax.vjp(lambda w: _conv(x, w, stride), w)
    return y, pullback(g)[0]


def test_a_jax_filter_gradient_is_grad_weight_deep_by_its_contraction():
    """The filter gradient's contraction is batch × the layer's output positions (its record: the input as
    (C_in, N, *map) by the output gradient as (C_out, N, *output map) into (C_in, C_out, *kernel)), so
    ``:deep`` from 4,096 rows: 32 × 14² = 6,272 and 16 × 16² = 4,096 are deep, 15 × 16² = 3,840 and 2 × 14² = 392
    are not; ``:deeper`` from 16,384: 16 × 32² = 16,384 and 32 × 28² = 25,088 are, 15 × 32² = 15,360 is deep. A
    stride-2 layer's (16 × 8² = 1,024 rows: its window the 8² output gradient, its output the 3² kernel) is one
    too, and a 1×1 layer's (window 14², output 1²) is ``:1x1`` besides, deep or not (2 × 14² = 392 rows,
    32 × 14² = 6,272)."""
    assert (DEEP_ROWS, DEEPER_ROWS) == (4096, 16384)

    def classes(*layer, stride=1):
        found = _jax_classes(lambda x, w, g: _with_grad_weight(x, w, g, stride), *_layer(*layer, stride))
        return [name for name in found if name.startswith("conv_backward")]

    assert classes(32, 14, 32, 64, 3) == ["conv_backward:grad_weight:deep"]
    assert classes(16, 16, 32, 64, 3) == ["conv_backward:grad_weight:deep"]
    assert classes(15, 16, 32, 64, 3) == ["conv_backward:grad_weight"]
    assert classes(16, 32, 32, 32, 3) == ["conv_backward:grad_weight:deeper"]
    assert classes(32, 28, 16, 32, 3) == ["conv_backward:grad_weight:deeper"]
    assert classes(15, 32, 32, 32, 3) == ["conv_backward:grad_weight:deep"]
    assert classes(2, 14, 32, 64, 3) == ["conv_backward:grad_weight"]
    assert classes(2, 14, 64, 256, 1) == ["conv_backward:grad_weight:1x1"]
    assert classes(32, 14, 64, 256, 1) == ["conv_backward:grad_weight:deep:1x1"]
    assert classes(16, 16, 32, 64, 3, stride=2) == ["conv_backward:grad_weight"]


def test_a_jax_training_steps_forward_and_input_gradient_keep_their_classes():
    """A two-layer CNN's gradient in its image and both weights: each layer's filter gradient is ``grad_weight``
    (32 × 14² = 6,272 rows: deep); the second layer's forward (K 32 × 9 = 288, N 64) keeps its view, wide, and so
    does its input gradient (the output gradient's 64 channels × 9 taps into 32: N 32, narrow) — an input gradient's
    window is the layer's kernel, its output a map."""
    jnp = jax.numpy
    x = jnp.ones((32, 14, 14, 3))
    w1, w2 = jnp.ones((3, 3, 3, 32)), jnp.ones((3, 3, 32, 64))

    def loss(x, w1, w2):
        return jnp.sum(_conv(jax.nn.relu(_conv(x, w1)), w2) ** 2)

    found = [name for name in _jax_classes(jax.grad(loss, argnums=(0, 1, 2)), x, w1, w2) if name.startswith("conv")]
    assert found.count("conv_backward:grad_weight:deep") == 2
    assert "conv:wide" in found and "conv:narrow" in found
    assert not any(name.startswith("conv_backward:grad_weight") and "deep" not in name for name in found)


def test_a_filter_gradient_xla_rewrote_without_metadata_keeps_its_record():
    """XLA:CPU rewrites a filter gradient's convolution into a YNNPACK fusion without metadata, between transposes that
    carry the convolution's name (``hlo_map.LAYOUT_OPCODES``): the record goes to the fusion that computes a
    convolution, never to a copy. Of half the squared output (the gradient waits for the forward, as in a training
    step) and of a loss whose gradient needs no output (XLA drops the forward: its record, computed nowhere, goes to the
    copy that holds its name; the gradient's still to its convolution)."""
    from neural_cost.adapters import adapter_for

    jnp = jax.numpy
    x, w, g = _layer(8, 14, 32, 64, 3)

    def squared(x, w):
        return jax.grad(lambda w: 0.5 * jnp.sum(jnp.square(_conv(x, w))))(w)

    def linear(x, w, g):
        return jax.grad(lambda w: jnp.vdot(_conv(x, w), g))(w)

    for fn, args in ((squared, (x, w)), (linear, (x, w, g))):
        estimate = estimate_trace(adapter_for("jax", cross_check=True).trace(jax.jit(fn), args))
        backward = next(i for i, c in enumerate(estimate.by_operation) if c.operation.attrs.get("phase") == "backward"
                        and c.kind == "conv")  # fmt: skip
        (kernel,) = [k for k in estimate.kernels if backward in k.operations]
        assert kernel.compiled_contraction == "convolution", (fn.__name__, kernel.name)
        row = next(r for r in kernel_rows(estimate, SPEC)[0] if r.index == estimate.kernels.index(kernel))
        assert kernel_class(estimate, row) == "conv_backward:grad_weight"  # 8 × 14² = 1,568 rows


def test_pytorch_and_tensorflow_gradients_keep_their_classes():
    """PyTorch computes both gradients in one ``convolution_backward`` call (``conv_backward:wide``: its layer's
    view); TensorFlow's graph runs ``Conv2DBackpropFilter`` as oneDNN's own kernel: neither is ``grad_weight``."""
    torch = pytest.importorskip("torch")
    from neural_cost.adapters import adapter_for

    aten = torch.ops.aten
    x, w, g = torch.randn(32, 32, 14, 14), torch.randn(64, 32, 3, 3), torch.randn(32, 64, 14, 14)

    def step(g, x, w):
        return aten.convolution_backward(g, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False])

    with torch.no_grad():
        estimate = estimate_trace(adapter_for("torch").trace(step, (g, x, w)))
    names = {kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0] if row.index is not None}
    assert names == {"conv_backward:wide"}
    tf = pytest.importorskip("tensorflow")

    def filter_gradient(x, g):
        return tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=[3, 3, 32, 64], out_backprop=g,
                                               strides=[1, 1, 1, 1], padding="SAME")  # fmt: skip

    traced = adapter_for("tensorflow").trace(filter_gradient, (tf.ones((32, 14, 14, 32)), tf.ones((32, 14, 14, 64))))
    estimate = estimate_trace(traced)
    names = {kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0] if row.index is not None}
    assert names and not any("grad_weight" in name for name in names)


def test_grad_weight_reads_its_own_curve_then_the_conv_familys_and_deep_stays_out_of_both():
    """``:deep`` is a way to run (``kernel_model.WAYS``): without a curve of its own it reads ``conv_backward:
    grad_weight``'s, and its points bend neither that curve nor a family's; so is ``:deeper``, and ``:1x1`` reads its
    tier's class. ``conv_backward:grad_weight`` is a member
    of ``conv_backward``, which reads ``conv``'s (a training class). Three shallow points at 2× their compute time,
    three deep ones at 8×: the shallow member's one knot is its points' medians (2e-4 → 4e-4 s), the deep one's
    (2e-4 → 1.6e-3 s); the ``conv_backward`` family holds the three shallow points only."""
    shallow = [Point("conv_backward:grad_weight", 1e-4 * k, 1e-6, 2e-4 * k) for k in (1, 2, 4)]
    deep = [Point("conv_backward:grad_weight:deep", 1e-4 * k, 1e-6, 8e-4 * k) for k in (1, 2, 4)]
    calibration = fit_calibration("jax", SPEC, shallow + deep)
    classes = calibration.classes
    assert family("conv_backward:grad_weight:deep") is None and family("conv_backward:grad_weight") == "conv_backward"
    assert classes["conv_backward:grad_weight"].seconds(2e-4, 1e-6) == pytest.approx(4e-4, rel=1e-6)
    assert classes["conv_backward:grad_weight:deep"].seconds(2e-4, 1e-6) == pytest.approx(1.6e-3, rel=1e-6)
    assert classes["conv_backward"].points == 3
    no_deep = fit_calibration("jax", SPEC, shallow)
    assert borrowed_class(no_deep, "conv_backward:grad_weight:deep") == "conv_backward:grad_weight"
    assert borrowed_class(no_deep, "conv_backward:grad_weight:deeper") == "conv_backward:grad_weight"
    assert borrowed_class(calibration, "conv_backward:grad_weight:deep:1x1") == "conv_backward:grad_weight:deep"
    assert borrowed_class(calibration, "conv_backward:grad_weight:1x1") == "conv_backward:grad_weight"
    family_only = _calibration({"conv": _flat("conv", -5.69897)})
    assert borrowed_class(family_only, "conv_backward:grad_weight:deep") == "conv"
    assert borrowed_class(family_only, "conv_backward:grad_weight") == "conv"


def test_a_calibration_without_grad_weight_reads_the_filter_gradient_off_conv_with_a_note():
    """A calibration made before the class (flat ``conv`` 2 µs, 10^-5.69897, under 10 µs of roofline time) reads a
    small deep filter gradient (a 1 → 2 channel 3×3 layer at batch 16 on 16² maps: 16 × 16² = 4,096 rows, 147 kFLOP)
    at 2 µs and says whose curve it read: XLA runs one so small itself (``:generic``, a way to run), whose class reads
    ``:deep``'s, then ``conv_backward:grad_weight``'s, then ``conv_backward``'s, then ``conv``'s."""
    from neural_cost.adapters import adapter_for

    traced = adapter_for("jax", cross_check=True).trace(jax.jit(_with_grad_weight), _layer(16, 16, 1, 2, 3))
    estimate = estimate_trace(traced)
    read = expected_time(estimate, _calibration({"conv": _flat("conv", -5.69897)}), machine={})
    (row,) = [row for row in read.rows if row.kernel_class.startswith("conv_backward")]
    assert row.kernel_class == "conv_backward:grad_weight:deep:generic"
    assert row.seconds == pytest.approx(2e-6, rel=1e-5)
    assert any("conv_backward:grad_weight:deep:generic (1) off conv" in note for note in read.notes)
