"""Strided and depthwise convolutions are classes of their own (``conv_views.STRIDED``,
``DEPTHWISE``), forward and backward.

Measured before (PyTorch on a 2-core AMD EPYC VM, hot buffers, one process): the backward of a
1×1 stride-2 shortcut, 16×32×64² → 64, ran 3.8–4.7 ms against a roofline bound of 0.40 ms, where
the ``conv_backward:narrow`` curve it was read off expected 0.76 ms; a 3×3 stride-2 layer's
backward ran at 1.3–2.3× its bound where stride-1 layers of the same FLOPs ran at 0.9–1.1×. JAX's
compiled 1×1 stride-2 convolution ran at 8.3× its bound, a stride-1 one at 3.7×. PyTorch's
depthwise 3×3 convolutions ran at 5–20× their bound, where the narrow curve read them at about 2×.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from neural_cost import estimate_trace
from neural_cost.analysis.conv_views import DEPTHWISE, STRIDED
from neural_cost.analysis.expected import expected_time
from neural_cost.analysis.kernel_classes import borrowed_class, kernel_class
from neural_cost.analysis.kernels import kernel_rows
from tests.analysis.test_kernel_bound import SPEC
from tests.analysis.test_kernel_classes import _calibration, _flat

torch = pytest.importorskip("torch")


def _classes(adapter, fn, *args):
    with torch.no_grad():
        estimate = estimate_trace(adapter.trace(fn, args))
    return [kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0] if row.index is not None]


def test_a_stride_above_one_is_strided_and_one_past_the_kernel_subsampled():
    """The stride against the kernel's dilated extent d·(k−1)+1, per spatial dim: 3×3 stride 2
    (extent 3 ≥ 2) strided whatever its width (32→64: K 288, N 64 would be wide; 3→16: narrow; channels on
    oneDNN's blocks of 16, ``test_pytorch_channels_off_the_blocks_are_unaligned``);
    1×1 stride 2 (extent 1 < 2) subsampled; a 3×3 of dilation 2 at stride 4 (extent 5 ≥ 4)
    strided, at stride 6 (extent 5 < 6) subsampled; stride (2, 1) on a 1×1 subsampled in one dim
    is subsampled; stride 1 keeps its width."""
    from neural_cost.adapters import adapter_for

    adapter = adapter_for("torch")

    def forward(c_in, c_out, k, stride, dilation=1):
        x, w = torch.randn(2, c_in, 32, 32), torch.randn(c_out, c_in, k, k)  # 256 positions or more: not thin
        return _classes(adapter, lambda x, w: torch.nn.functional.conv2d(x, w, stride=stride, dilation=dilation), x, w)

    assert forward(32, 64, 3, 2) == ["conv:strided"]
    assert forward(3, 16, 3, 2) == ["conv:strided"]
    assert forward(32, 64, 1, 2) == ["conv:subsampled"]
    assert forward(16, 16, 3, 4, dilation=2) == ["conv:strided"]
    assert forward(16, 16, 3, 6, dilation=2) == ["conv:subsampled"]
    assert forward(32, 64, 1, (2, 1)) == ["conv:subsampled"]
    assert forward(64, 64, 3, 1) == ["conv:wide"]
    assert set(STRIDED) == {"strided", "subsampled"}

    jax = pytest.importorskip("jax")
    jax_adapter = adapter_for("jax", cross_check=True)  # its compiled kernels, as predict and the benchmark read
    for k, expected in ((3, "conv:strided"), (1, "conv:subsampled")):
        x, w = jax.numpy.ones((2, 32, 32, 32)), jax.numpy.ones((k, k, 32, 64))

        def conv(x, w):
            return jax.lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

        assert _classes(jax_adapter, jax.jit(conv), x, w) == [expected]


def test_a_jax_strided_three_channel_stem_is_shallow_as_its_stride_one_stems():
    """XLA:CPU runs a 3-channel 3×3 stem at 14–27× its bound whatever its stride (``conv_views.STRIDED_STEM``): in
    JAX a stride-2 one of 32 or 16 outputs (K 27 < 32, N < 64) is ``conv:shallow`` (``:generic`` where XLA runs it
    itself, as a 16-output one). One of 64 outputs (N 64), a 7×7
    stem (K 147) and a 1×1 stride-2 3-channel layer (subsampled) keep their stride's class, and so does PyTorch's
    and TensorFlow's 3×3 stride-2 stem."""
    from neural_cost.adapters import adapter_for

    jax = pytest.importorskip("jax")
    jax_adapter = adapter_for("jax", cross_check=True)

    def stem(c_out, k, size=64):
        x, w = jax.numpy.ones((2, size, size, 3)), jax.numpy.ones((k, k, 3, c_out))

        def conv(x, w):
            return jax.lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

        return _classes(jax_adapter, jax.jit(conv), x, w)

    assert stem(32, 3) == ["conv:shallow"]
    assert stem(16, 3) == ["conv:shallow:generic"]  # 16 outputs: XLA's own convolution, no YNNPACK fusion
    assert stem(64, 3) == ["conv:strided"] and stem(64, 7) == ["conv:strided"]
    assert stem(32, 1) == ["conv:subsampled"]
    torch_stem = lambda x, w: torch.nn.functional.conv2d(x, w, stride=2, padding=1)  # noqa: E731
    assert _classes(adapter_for("torch"), torch_stem, torch.randn(2, 3, 64, 64), torch.randn(32, 3, 3, 3)) == [
        "conv:strided"
    ]
    tf = pytest.importorskip("tensorflow")
    layer = lambda x, w: tf.nn.conv2d(x, w, 2, "SAME")  # noqa: E731
    assert _classes(adapter_for("tensorflow"), layer, tf.ones((2, 64, 64, 3)), tf.ones((3, 3, 3, 32))) == [
        "conv:strided"
    ]


def test_one_input_channel_per_group_is_depthwise_and_a_stride_is_its_member():
    """Canonical weight (C_out, C_in/groups, *kernel) with C_in/groups = 1 and groups > 1:
    ``depthwise_conv:stride1`` — with a channel multiplier of 2 too (64 groups, 128 outputs) — and at
    stride 2 ``depthwise_conv:strided``; two channels per group is a grouped convolution (K 18: shallow); one
    group of one channel is no depthwise layer (a 1-channel image's stem: K 9, shallow). JAX's
    ``feature_group_count`` and TensorFlow's ``DepthwiseConv2dNative`` read the same."""
    from neural_cost.adapters import adapter_for

    adapter = adapter_for("torch")

    def forward(c_in, c_out, groups, stride=1):
        x, w = torch.randn(2, c_in, 16, 16), torch.randn(c_out, c_in // groups, 3, 3)
        fn = lambda x, w: torch.nn.functional.conv2d(x, w, stride=stride, padding=1, groups=groups)  # noqa: E731
        return _classes(adapter, fn, x, w)

    assert forward(64, 64, 64) == ["depthwise_conv:stride1"]
    assert forward(64, 64, 64, stride=2) == ["depthwise_conv:strided"]
    assert forward(64, 128, 64) == ["depthwise_conv:stride1"]
    assert forward(64, 64, 32) == ["conv:shallow"]  # K 18 < 32: conv_views.SHALLOW
    assert forward(1, 16, 1) == ["conv:shallow"]

    jax = pytest.importorskip("jax")
    x, w = jax.numpy.ones((2, 16, 16, 32)), jax.numpy.ones((3, 3, 1, 32))

    def depthwise(x, w, s=1):
        return jax.lax.conv_general_dilated(
            x, w, (s, s), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=32
        )

    jax_adapter = adapter_for("jax", cross_check=True)
    assert _classes(jax_adapter, jax.jit(depthwise), x, w) == ["depthwise_conv:stride1"]
    strided = jax.jit(lambda x, w: depthwise(x, w, 2))
    assert _classes(jax_adapter, strided, x, w) == ["depthwise_conv:strided"]
    tf = pytest.importorskip("tensorflow")
    for s, expected in ((1, "depthwise_conv:stride1"), (2, "depthwise_conv:strided")):
        layer = lambda x, w, s=s: tf.nn.depthwise_conv2d(x, w, (1, s, s, 1), "SAME")  # noqa: E731
        found = _classes(adapter_for("tensorflow"), layer, tf.ones((2, 16, 16, 32)), tf.ones((3, 3, 32, 1)))
        assert found == [expected]


def test_a_strided_layers_backward_is_strided_read_off_either_gradient():
    """The stride of the layer a ``convolution_backward`` differentiates: off its ``grad_input``
    record (whose stride is the layer's), or without one (a stem: the image asks no gradient) off
    its ``grad_weight`` record, whose dilation is the layer's stride. A transposed layer's stays
    the family's."""
    from neural_cost.adapters import adapter_for

    adapter, aten = adapter_for("torch"), torch.ops.aten

    def backward(c_in, c_out, k, stride, input_grad=True, transposed=False, groups=1):
        x = torch.randn(2, c_in, 16, 16)
        w = torch.randn(c_in, c_out, k, k) if transposed else torch.randn(c_out, c_in // groups, k, k)
        layer = torch.nn.functional.conv_transpose2d if transposed else torch.nn.functional.conv2d
        with torch.no_grad():
            y = layer(x, w, stride=stride, padding=k // 2, groups=groups)

        def step(g, x, w):
            return aten.convolution_backward(g, x, w, None, [stride] * 2, [k // 2] * 2, [1, 1], transposed, [0, 0],
                                             groups, [input_grad, True, False])  # fmt: skip

        (name,) = set(_classes(adapter, step, torch.randn(y.shape), x, w))
        return name

    assert backward(32, 64, 3, 2) == "conv_backward:strided"
    assert backward(32, 64, 1, 2) == "conv_backward:subsampled"
    assert backward(3, 64, 7, 2, input_grad=False) == "conv_backward:strided"
    assert backward(32, 64, 1, 2, input_grad=False) == "conv_backward:subsampled"
    assert backward(64, 64, 3, 1, input_grad=False) == "conv_backward:wide"
    assert backward(64, 32, 3, 2, transposed=True) == "conv_backward"
    # depthwise, read off the grad_input record's (C_out, 1, k, k) or the grad_weight record's (1, C_out, k, k)
    assert backward(32, 32, 3, 1, groups=32) == "depthwise_conv_backward:stride1"
    assert backward(32, 32, 3, 2, groups=32, input_grad=False) == "depthwise_conv_backward:strided"
    assert backward(32, 32, 3, 2, groups=32) == "depthwise_conv_backward:strided"
    assert backward(32, 32, 3, 1, groups=16) == "conv_backward:narrow"


def test_a_depthwise_layers_input_gradient_is_depthwise_stride1_in_jax_and_tensorflow():
    """JAX records a stride-2 depthwise layer's input gradient as an input-dilated convolution of
    one input channel per group (weight (32, 1, 3, 3), lhs_dilation 2), a stride-1 one's as a grouped
    convolution; TensorFlow's ``DepthwiseConv2dNativeBackpropInput`` is a transposed convolution
    of one channel per group in and out (weight (32, 1, 3, 3), groups 32). XLA runs each as a
    grouped convolution at the input's resolution: ``depthwise_conv:stride1``, and a strided
    layer's, input-dilated, ``depthwise_conv:dilated`` — not the family's ``conv``. A transposed
    convolution of several channels per group stays the family's."""
    from neural_cost.adapters import adapter_for

    jax = pytest.importorskip("jax")
    jax_adapter = adapter_for("jax", cross_check=True)

    def input_gradients(stride):
        def loss(x, w):
            y = jax.lax.conv_general_dilated(
                x, w, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=32
            )
            return (y * y).sum()  # fmt: skip

        grad = jax.jit(jax.grad(loss))  # the input's gradient: no filter gradient in the program
        estimate = estimate_trace(
            jax_adapter.trace(grad, (jax.numpy.ones((2, 16, 16, 32)), jax.numpy.ones((3, 3, 1, 32))))
        )
        conv = [i for i, cost in enumerate(estimate.by_operation) if cost.kind == "conv"]
        transposes = conv[1:]  # the forward convolution, then the input's gradient
        rows = kernel_rows(estimate, SPEC)[0]
        return {kernel_class(estimate, row) for row in rows if row.index is not None
                and set(estimate.kernels[row.index].operations) & set(transposes)}  # fmt: skip

    assert input_gradients(2) == {"depthwise_conv:dilated"}  # input-dilated: XLA's generic emitter's loop
    assert input_gradients(1) == {"depthwise_conv:stride1"}
    tf = pytest.importorskip("tensorflow")

    def backprop_input(channels, groups_of):
        def fn(grad, w):
            return tf.raw_ops.DepthwiseConv2dNativeBackpropInput(
                input_sizes=[2, 16, 16, channels], filter=w, out_backprop=grad, strides=[1, 2, 2, 1], padding="SAME"
            )

        return _classes(adapter_for("tensorflow"), fn, tf.ones((2, 8, 8, channels * groups_of)),
                        tf.ones((3, 3, channels, groups_of)))  # fmt: skip

    assert backprop_input(32, 1) == ["depthwise_conv:dilated"]  # of a stride-2 layer
    assert backprop_input(32, 2) == ["conv"]  # a channel multiplier of 2: two outputs per group


def test_without_a_stride_curve_a_strided_convolution_reads_the_familys_with_a_note():
    """A calibration without the stride classes (one made before them) reads a strided layer off
    the family's ``conv`` curve and says so; with neither, its roofline bound, said too. Flat
    curves: ``conv`` 2 µs, ``conv:strided`` 5 µs (10^-5.30103)."""
    from neural_cost.adapters import adapter_for

    with torch.no_grad():
        x, w = torch.randn(2, 32, 16, 16), torch.randn(48, 32, 3, 3)  # N 48: narrow, not thin on its 2 × 7² positions
        traced = adapter_for("torch").trace(lambda x, w: torch.nn.functional.conv2d(x, w, stride=2), (x, w))
    estimate = estimate_trace(traced)
    family_only = _calibration({"conv": _flat("conv", -5.69897), "conv:wide": _flat("conv:wide", -6.0)})
    assert borrowed_class(family_only, "conv:strided") == "conv"
    read = expected_time(estimate, family_only, machine={})
    assert read.rows[0].kernel_class == "conv:strided" and read.rows[0].seconds == pytest.approx(2e-6, rel=1e-5)
    assert any("conv:strided (1) off conv" in note for note in read.notes)
    own = expected_time(estimate, _calibration({"conv:strided": _flat("conv:strided", -5.30103)}), machine={})
    assert own.rows[0].seconds == pytest.approx(5e-6, rel=1e-5) and not any("off" in note for note in own.notes)
    none = expected_time(estimate, _calibration({"conv:wide": _flat("conv:wide", -6.0)}), machine={})
    assert none.rows[0].basis == "roofline"
    assert any("conv:strided (1): scored at their roofline bound" in note for note in none.notes)


@pytest.mark.parametrize("framework", ["torch", "jax", "tensorflow"])
def test_every_frameworks_grid_calibrates_the_stride_and_depthwise_classes(framework, monkeypatch):
    """The full grids' strided and depthwise programs (named ``s2``, ``depthwise``) land in their
    classes, forward (and for PyTorch backward), as many as the grids hold of each: a stride the
    kernel spans (k ≥ s) strided, one past it subsampled (``_microgrid.STRIDED_CONVS``: 10 and 9),
    but PyTorch's 24-channel two (``conv:unaligned``, with its own grid's stride-2 one), every
    ``DEPTHWISE_CONVS`` one depthwise, of stride 1 (8, ``depthwise_conv:stride1``) or 2 (7, ``:strided``);
    PyTorch's backwards the same way (10, 9; depthwise 6 and 7); TensorFlow's XLA programs of
    ``XLA_DEPTHWISE_CONVS`` ``depthwise_conv:stride1@xla`` (6) and ``:strided@xla`` (6); JAX's and
    TensorFlow's XLA ``DILATED_DEPTHWISE_CONVS`` ``depthwise_conv:dilated`` (6)."""
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    pytest.importorskip({"torch": "torch", "jax": "jax", "tensorflow": "tensorflow"}[framework])
    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.workload import trace_workload

    adapter = adapter_for(framework, cross_check=True) if framework == "jax" else adapter_for(framework)
    found: dict[str, int] = {}
    for program in adapter.microbenchmarks(quick=False):
        if not (program.name.endswith(" s2") or "depthwise" in program.name.lower()) or "grad_weight" in program.name:
            continue  # JAX's filter gradients of stride-2 layers run their forward too
        estimate = estimate_trace(trace_workload(adapter, program.fn, program.args, program.kwargs))
        for row in kernel_rows(estimate, SPEC)[0]:
            name = kernel_class(estimate, row)
            if name.split(":", 1)[-1] in (*STRIDED, "unaligned") or name.startswith(DEPTHWISE):
                found[name] = found.get(name, 0) + 1
    from neural_cost.adapters import _microgrid as grid

    def kinds(convs):  # (strided, subsampled) among (..., kernel, stride[, input grad])
        spans = [conv[4] >= conv[5] for conv in convs if conv[5] > 1]
        return spans.count(True), spans.count(False)

    def depthwise(convs):  # (stride 1, stride above 1) among (batch, channels, size, kernel, stride)
        strides = [conv[4] for conv in convs]
        return strides.count(1), len(strides) - strides.count(1)

    assert kinds(grid.STRIDED_CONVS) == (10, 9) and depthwise(grid.DEPTHWISE_CONVS) == (8, 7)
    if framework == "torch":  # a 24-channel strided and subsampled one are unaligned, and _UNALIGNED's stride-2 one
        assert (found["conv:strided"], found["conv:subsampled"], found["conv:unaligned"]) == (9, 8, 3)
    else:
        assert (found["conv:strided"], found["conv:subsampled"]) == kinds(grid.STRIDED_CONVS)
    if framework == "torch":  # and PyTorch's own larger ones, three of each stride
        from neural_cost.adapters._torch.microbench import _LARGE_DEPTHWISE

        assert depthwise(_LARGE_DEPTHWISE) == (3, 3)
        assert (found["depthwise_conv:stride1"], found["depthwise_conv:strided"]) == (8 + 3, 7 + 3)
    else:
        assert (found["depthwise_conv:stride1"], found["depthwise_conv:strided"]) == depthwise(grid.DEPTHWISE_CONVS)
    if framework == "tensorflow":  # XLA's own depthwise programs: its generic emitter's classes
        xla = (found["depthwise_conv:stride1@xla"], found["depthwise_conv:strided@xla"])
        assert xla == depthwise(grid.XLA_DEPTHWISE_CONVS) == (6, 6)
    if framework != "torch":  # a stride-2 layer's input gradient, input-dilated
        dilated = found["depthwise_conv:dilated" + ("@xla" if framework == "tensorflow" else "")]
        assert dilated == len(grid.DILATED_DEPTHWISE_CONVS) == 6
    if framework == "torch":
        from neural_cost.adapters._torch.microbench import _BACKWARD_CONVS, _BACKWARD_DEPTHWISE

        assert kinds(_BACKWARD_CONVS) == (10, 9) and depthwise(_BACKWARD_DEPTHWISE) == (6, 7)
        assert (found["conv_backward:strided"], found["conv_backward:subsampled"]) == kinds(_BACKWARD_CONVS)
        counted = (found["depthwise_conv_backward:stride1"], found["depthwise_conv_backward:strided"])
        assert counted == depthwise(_BACKWARD_DEPTHWISE)


def test_depthwise_points_stay_out_of_the_conv_familys_curve():
    """The family's curve serves transposed and input-dilated convolutions (XLA's gradients); a
    depthwise layer runs memory-bound at many times its bound, so its points fit a class of its
    own, not the family (whose median error went from 37% to 256% on JAX's grid with them in).
    Dense convolutions at 2× their compute time; depthwise ones at 200× their memory time, which
    would have made the family a memory curve that reads a dense layer at 10× its time."""
    from neural_cost.hardware.kernel_model import Point, fit_calibration

    dense = [Point("conv:wide", 1e-4 * k, 1e-5 * k, 2e-4 * k) for k in (1, 2, 4, 8)]
    depthwise = [Point("depthwise_conv", 1e-6 * k, 1e-5 * k, 2e-3 * k) for k in (1, 2, 4, 8)]
    calibration = fit_calibration("torch", SPEC, dense + depthwise)
    assert calibration.classes["conv"].points == 4 and calibration.classes["conv"].memory is None
    assert calibration.classes["depthwise_conv"].points == 4
    # Four points make one knot (POINTS_PER_KNOT 3), at the medians in log space: roofline
    # √(2e-4 · 4e-4) = 2.8284e-4 s, measured √(4e-4 · 8e-4) = 5.6569e-4 s. A dense layer there,
    # 2.8284e-5 s of memory time, reads 5.6569e-4 s off the family; with the depthwise points in,
    # their memory curve (knot 2.8284e-5 → 5.6569e-3) would read it at 5.6569e-3 s.
    knot = 2e-4 * 2**0.5
    assert calibration.classes["conv"].seconds(knot, knot / 10) == pytest.approx(2 * knot, rel=1e-6)
    own = _calibration({"conv": _flat("conv", -5.69897)})
    assert borrowed_class(own, "depthwise_conv") == "conv" and borrowed_class(own, "depthwise_conv_backward") == "conv"


def test_each_stride_of_a_depthwise_layer_has_its_own_curve_and_falls_back_to_the_familys():
    """``depthwise_conv:stride1`` and ``depthwise_conv:strided`` are members of the depthwise family:
    each fits its own points (read together, the strided ones pulled the curve the stride-1 layers
    read under half their time), a calibration with too few of a member's reads the family's curve,
    noted, and one without any depthwise curve reads ``conv``'s. Three strided points at 100× their
    memory time, three of stride 1 at 300×: each member's one knot is its points' medians (memory
    2e-5 → 2e-3 s and 6e-3 s); the family's six points, ordered, make two bins of three, knots
    (1e-5 → 2e-3) and (4e-5 → 6e-3) s, and at 2e-5, halfway between them in log, it reads
    2e-3 · √3 = 3.4641e-3 s."""
    from neural_cost.hardware.kernel_model import Point, fit_calibration

    strided = [Point("depthwise_conv:strided", 1e-7, 1e-5 * k, 1e-3 * k) for k in (1, 2, 4)]
    plain = [Point("depthwise_conv:stride1", 1e-7, 1e-5 * k, 3e-3 * k) for k in (1, 2, 4)]
    calibration = fit_calibration("jax", SPEC, strided + plain)
    classes = calibration.classes
    assert [classes[name].points for name in ("depthwise_conv:strided", "depthwise_conv:stride1")] == [3, 3]
    assert classes["depthwise_conv:strided"].seconds(0.0, 2e-5) == pytest.approx(2e-3, rel=1e-6)
    assert classes["depthwise_conv:stride1"].seconds(0.0, 2e-5) == pytest.approx(6e-3, rel=1e-6)
    assert classes["depthwise_conv"].points == 6
    assert classes["depthwise_conv"].seconds(0.0, 2e-5) == pytest.approx(2e-3 * 3**0.5, rel=1e-6)
    few = fit_calibration("jax", SPEC, strided[:2] + plain)  # two points: no curve of its own
    assert borrowed_class(few, "depthwise_conv:strided") == "depthwise_conv"
    assert borrowed_class(few, "depthwise_conv:stride1") is None  # its own
    assert borrowed_class(_calibration({"conv": _flat("conv", -5.69897)}), "depthwise_conv:strided") == "conv"


def test_pytorch_channels_off_the_blocks_are_unaligned():
    """PyTorch (oneDNN): output channels per group not a multiple of 16, or more than 16 input channels per
    group not a multiple of it, make ``conv:unaligned`` whatever the width or stride (``UNALIGNED``): 24→24,
    32→24, 24→32, a 1×1 64→56, a stride-2 24→24, 48→48 in 2 groups (24 per group), 16→8. Kept: 12→32 and
    8→32 (inputs under 16: narrow, N 32 < 64), 64→64 in 2 groups (32 per group: narrow, N 32), 64→64 wide, a
    3→24 stem (K 27 < 32, N 24 < 64: shallow), a depthwise 24-channel layer. A 1×1 layer of stride 1 on the
    blocks is ``conv:pointwise`` (``POINTWISE``), narrow or wide; of stride 2 it stays subsampled. XLA's
    convolutions (JAX) keep their width: 24→24 is narrow there, and so is a 1×1 32→32."""
    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.conv_views import UNALIGNED

    adapter = adapter_for("torch")

    def forward(c_in, c_out, k=3, stride=1, groups=1):
        x, w = torch.randn(2, c_in, 32, 32), torch.randn(c_out, c_in // groups, k, k)  # not thin, strided too
        fn = lambda x, w: torch.nn.functional.conv2d(x, w, stride=stride, padding=k // 2, groups=groups)  # noqa: E731
        return _classes(adapter, fn, x, w)

    assert UNALIGNED == 16
    for args in ((24, 24), (32, 24), (24, 32), (64, 56, 1), (24, 24, 3, 2), (48, 48, 3, 1, 2), (16, 8)):
        assert forward(*args) == ["conv:unaligned"], args
    assert forward(12, 32) == forward(8, 32) == forward(64, 64, 3, 1, 2) == ["conv:narrow"]
    assert forward(64, 64) == ["conv:wide"]
    # 1×1 of stride 1 on the blocks: pointwise, narrow or wide (POINTWISE); strided 1×1 stays subsampled
    assert forward(64, 64, 1) == forward(32, 32, 1) == forward(384, 2304, 1) == ["conv:pointwise"]
    assert forward(64, 128, 1, 2) == ["conv:subsampled"]
    assert forward(3, 24) == ["conv:shallow"]
    assert forward(24, 24, 3, 1, 24) == ["depthwise_conv:stride1"]

    jax = pytest.importorskip("jax")
    x, w = jax.numpy.ones((2, 16, 16, 24)), jax.numpy.ones((3, 3, 24, 24))

    def conv(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    assert _classes(adapter_for("jax", cross_check=True), jax.jit(conv), x, w) == ["conv:narrow"]
    x, w = jax.numpy.ones((2, 16, 16, 32)), jax.numpy.ones((1, 1, 32, 32))
    assert _classes(adapter_for("jax", cross_check=True), jax.jit(conv), x, w) == ["conv:narrow"]


def test_pytorch_convolutions_it_runs_without_onednn_keep_their_width():
    """PyTorch runs a float32 CPU convolution without oneDNN (``native``, ``ConvParams::use_mkldnn`` on more than
    one thread) for one image, one group, a kernel of at most 3 in a last dim and an input of at most 20,480
    elements: 1×24×16² (6,144) 24→24 stays narrow and 1×64×16² 1×1 (16,384) wide (K 64, N 64), where 1×24×32² (24,576)
    is unaligned and 2×24×16² too (two images); a 5×5 kernel, or 2 groups, takes oneDNN at batch 1 as well.
    A bfloat16 layer keeps its width (the grid's are float32)."""
    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.conv_views import NATIVE_ELEMENTS

    adapter = adapter_for("torch")

    def forward(n, c_in, c_out, size, k=3, groups=1, dtype=torch.float32):
        x, w = torch.randn(n, c_in, size, size, dtype=dtype), torch.randn(c_out, c_in // groups, k, k, dtype=dtype)
        fn = lambda x, w: torch.nn.functional.conv2d(x, w, padding=k // 2, groups=groups)  # noqa: E731
        return _classes(adapter, fn, x, w)

    assert NATIVE_ELEMENTS == 20480
    assert forward(1, 24, 24, 16) == ["conv:narrow"]
    assert forward(1, 64, 64, 16, k=1) == ["conv:wide"]
    assert forward(1, 24, 24, 32) == forward(2, 24, 24, 16) == ["conv:unaligned"]
    assert forward(1, 24, 24, 16, k=5) == forward(1, 48, 48, 16, groups=2) == ["conv:unaligned"]
    assert forward(2, 24, 24, 16, dtype=torch.bfloat16) == ["conv:narrow"]


def test_a_convolution_of_under_256_output_positions_is_thin():
    """``conv_views.THIN``: output positions are batch × output map. PyTorch, padding k // 2: a 3×3 512→512 layer on
    4 × 3² maps (36 positions) is thin, on maps of at most 4 × 4 ``conv:small_map`` (``SMALL_MAP``), on 1 × 5² (25)
    ``conv:thin``, and on 4 × 8² (256) wide; a 64 → 64 3×3 stride-2 layer from 2 × 16² (8² out:
    128) thin, from 2 × 24² (12²: 288) strided; a 64 → 72 one on 2 × 8² (off oneDNN's blocks, K 576, N 72) thin.
    Kept, on 2 × 8²: a 32→32 layer (narrow: its weights are small) and a 24→24 one (unaligned, N 24); a 1×1
    stride-1 layer on 4 × 3² (PyTorch's ``conv:pointwise``), a 3-channel stem on 1 × 8² (``conv:shallow``), a
    depthwise layer on 1 × 8². JAX's 1×1 1024 → 1024 on 4 × 3² is thin (``conv:small_map``), on 4 × 5² (100)
    ``conv:thin``; TensorFlow's graph op the same ``:1x1`` (``ONE_BY_ONE``: ``conv:small_map:1x1``, ``conv:thin:1x1``),
    at stride 2 from 4 × 6² too, and its 3×3 one on 4 × 3² plain ``conv:small_map``; on 4 × 8² wide in both. A
    ``jit_compile`` function's 1×1 layer is XLA's kernel, not oneDNN's: ``conv:small_map@xla``."""
    from neural_cost.adapters import _microgrid as grid
    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.conv_views import SMALL_MAP, THIN

    adapter = adapter_for("torch")

    def forward(n, c_in, c_out, size, k=3, stride=1, groups=1):
        x, w = torch.randn(n, c_in, size, size), torch.randn(c_out, c_in // groups, k, k)
        fn = lambda x, w: torch.nn.functional.conv2d(x, w, stride=stride, padding=k // 2, groups=groups)  # noqa: E731
        return _classes(adapter, fn, x, w)

    assert THIN == 256 and SMALL_MAP == 4
    assert forward(4, 512, 512, 3) == forward(4, 512, 512, 4) == forward(15, 64, 64, 4) == ["conv:small_map"]
    assert forward(1, 512, 512, 5) == forward(2, 64, 64, 16, stride=2) == forward(2, 64, 72, 8) == ["conv:thin"]
    assert forward(16, 64, 64, 4) == ["conv:wide"]  # 256 positions: not thin, whatever its maps
    assert forward(2, 32, 32, 8) == ["conv:narrow"] and forward(2, 24, 24, 8) == ["conv:unaligned"]
    assert forward(4, 512, 512, 8) == ["conv:wide"] and forward(2, 64, 64, 24, stride=2) == ["conv:strided"]
    assert forward(4, 512, 512, 3, k=1) == ["conv:pointwise"]
    assert forward(1, 3, 16, 8) == ["conv:shallow"] and forward(1, 32, 32, 8, groups=32) == ["depthwise_conv:stride1"]

    tf = pytest.importorskip("tensorflow")
    for size, expected in ((3, "conv:small_map:1x1"), (5, "conv:thin:1x1"), (8, "conv:wide")):
        x, w = tf.ones((4, size, size, 1024)), tf.ones((1, 1, 1024, 1024))
        found = _classes(adapter_for("tensorflow"), tf.function(lambda x, w: tf.nn.conv2d(x, w, 1, "SAME")), x, w)
        assert found == [expected]
    x, w = tf.ones((4, 6, 6, 1024)), tf.ones((1, 1, 1024, 1024))
    strided = tf.function(lambda x, w: tf.nn.conv2d(x, w, 2, "SAME"))  # 4 × 3² out: 36 positions
    assert _classes(adapter_for("tensorflow"), strided, x, w) == ["conv:small_map:1x1"]
    x, w = tf.ones((4, 3, 3, 512)), tf.ones((3, 3, 512, 512))
    found = _classes(adapter_for("tensorflow"), tf.function(lambda x, w: tf.nn.conv2d(x, w, 1, "SAME")), x, w)
    assert found == ["conv:small_map"]
    x, w = tf.ones((4, 3, 3, 1024)), tf.ones((1, 1, 1024, 1024))
    compiled = tf.function(lambda x, w: tf.nn.conv2d(x, w, 1, "SAME"), jit_compile=True)
    assert _classes(adapter_for("tensorflow"), compiled, x, w) == ["conv:small_map@xla"]
    jax = pytest.importorskip("jax")
    x, w = jax.numpy.ones((4, 3, 3, 1024)), jax.numpy.ones((1, 1, 1024, 1024))

    def conv(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    assert _classes(adapter_for("jax", cross_check=True), jax.jit(conv), x, w) == ["conv:small_map"]
    x = jax.numpy.ones((4, 5, 5, 1024))
    assert _classes(adapter_for("jax", cross_check=True), jax.jit(conv), x, w) == ["conv:thin"]
    # the grid's thin layers are thin in every framework (PyTorch's 1×1 ones stay pointwise), no held-out layer is
    assert all(n * size * size < THIN for n, _, _, size, _ in grid.THIN_CONVS) and len(grid.THIN_CONVS) == 14
    assert sum(size <= SMALL_MAP for *_, size, _ in grid.THIN_CONVS) == 8


@pytest.mark.parametrize("framework", ["torch", "jax", "tensorflow"])
def test_every_frameworks_grid_times_its_thin_layers(framework, monkeypatch):
    """Each full grid runs ``_microgrid.THIN_CONVS`` (14) at stride 1: six ``conv:thin`` and eight ``conv:small_map``
    (3² and 4² maps), but four of PyTorch's five 1×1 ones are ``conv:pointwise`` (one on a larger map, three on small
    ones; the fifth, 1 × 1024 × 4², it runs without oneDNN, ``conv_views.native``) and TensorFlow's five are ``:1x1``;
    none in the quick grid. TensorFlow's grid runs twelve thin 1×1 layers of its own."""
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    pytest.importorskip({"torch": "torch", "jax": "jax", "tensorflow": "tensorflow"}[framework])
    from neural_cost.adapters import _microgrid as grid
    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.workload import trace_workload

    adapter = adapter_for(framework, cross_check=True) if framework == "jax" else adapter_for(framework)
    shapes = {f"{n}x{c_in}x{size}x{size}->{c_out} k{k}" for n, c_in, c_out, size, k in grid.THIN_CONVS}
    shapes |= {f"{n}x{size}x{size}x{c_in}->{c_out} k{k}" for n, c_in, c_out, size, k in grid.THIN_CONVS}  # TF's

    def thin(quick):
        named = [p for p in adapter.microbenchmarks(quick=quick) if "pool" not in p.name]
        return [p for p in named if any(p.name.endswith(s) or f"{s} " in p.name for s in shapes)]

    programs = thin(False)
    assert len(programs) == 14 and not thin(True)
    classes = []
    for program in programs:
        estimate = estimate_trace(trace_workload(adapter, program.fn, program.args, program.kwargs))
        classes += [kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0] if row.index is not None]
    # PyTorch's 1×1 layers: 1×2048×7² and 8×512×3², 2×1024×3², 3×256×4² run through oneDNN (pointwise); 1×1024×4²
    # (16,384 elements) without it: small_map. TensorFlow's five are ``:1x1`` (one thin, four on small maps)
    expected = {
        "torch": {"conv:thin": 5, "conv:small_map": 5, "conv:pointwise": 4},
        "jax": {"conv:thin": 6, "conv:small_map": 8},
        "tensorflow": {"conv:thin": 5, "conv:thin:1x1": 1, "conv:small_map": 4, "conv:small_map:1x1": 4},
    }[framework]
    assert Counter(classes) == expected
    if framework == "tensorflow":  # and twelve 1×1 ones of its own: seven thin, five on small maps
        from neural_cost.adapters._tf.microbench import _THIN_POINTWISE

        names = {f"Conv2D {n}x{size}x{size}x{c_in}->{c_out} k1" for n, c_in, c_out, size, _ in _THIN_POINTWISE}
        own = [p for p in adapter.microbenchmarks(quick=False) if p.name in names]
        assert len(own) == len(_THIN_POINTWISE) == 12
        found = Counter()
        for program in own:
            estimate = estimate_trace(trace_workload(adapter, program.fn, program.args, program.kwargs))
            found.update(kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0] if row.index is not None)
        assert found == {"conv:thin:1x1": 7, "conv:small_map:1x1": 5}


def test_a_jax_kernel_of_chained_thin_convolutions_is_conv_chained_read_whole():
    """``conv_views.CHAINED``: XLA:CPU fuses two ResNet bottleneck blocks (256 → 64 → 256) on 16 × 3² maps (144
    positions: thin) and the global mean and dense head after them into one kernel of six convolutions and a dot:
    ``conv:chained``, one part whose roofline times are the kernel's. The same blocks without the head compile to a
    kernel per convolution, each its view's class (``conv:small_map``). A kernel that pools stays parts
    (``test_a_kernel_running_several_contractions_is_read_once_per_contraction``)."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from neural_cost.adapters import adapter_for
    from neural_cost.adapters._jax.microbench import _tail
    from neural_cost.analysis.kernel_classes import parts

    adapter, rng = adapter_for("jax", cross_check=True), np.random.default_rng(0)
    c, mid = 256, 64
    weights = []
    for _ in range(2):
        for k, c_in, c_out in ((1, c, mid), (3, mid, mid), (1, mid, c)):
            weights += [jnp.asarray(rng.standard_normal((k, k, c_in, c_out), dtype=np.float32))]
            weights += [jnp.asarray(rng.standard_normal(c_out, dtype=np.float32)) for _ in range(3)]
    x = jnp.asarray(rng.standard_normal((16, 3, 3, c), dtype=np.float32))
    head = jnp.asarray(rng.standard_normal((c, 1000), dtype=np.float32))

    def rows(fn, *args):
        estimate = estimate_trace(adapter.trace(jax.jit(fn), args))
        return estimate, [row for row in kernel_rows(estimate, SPEC)[0] if row.index is not None]

    estimate, found = rows(_tail, x, *weights, head)
    chains = [row for row in found if kernel_class(estimate, row) == "conv:chained"]
    assert len(chains) == 1
    (part,) = parts(estimate, chains[0], SPEC)
    assert (part.kernel_class, part.compute_seconds, part.memory_seconds) == (
        "conv:chained", chains[0].compute_seconds, chains[0].memory_seconds)  # fmt: skip
    convs = [estimate.by_operation[i].kind for i in estimate.kernels[chains[0].index].operations]
    assert convs.count("conv") == 6 and convs.count("matmul") == 1

    def blocks(x, *weights):  # the tail without its head
        from neural_cost.adapters._jax.microbench import _conv

        for i in range(0, len(weights), 12):
            w1, b1, s1, t1, w2, b2, s2, t2, w3, b3, s3, t3 = weights[i : i + 12]
            h = jax.nn.relu((_conv(x, w1, "NHWC") + b1) * s1 + t1)
            h = jax.nn.relu((_conv(h, w2, "NHWC") + b2) * s2 + t2)
            x = jax.nn.relu(x + (_conv(h, w3, "NHWC") + b3) * s3 + t3)
        return x

    estimate, found = rows(blocks, x, *weights)
    classes = [kernel_class(estimate, row) for row in found]
    assert classes.count("conv:small_map") == 6 and "conv:chained" not in classes


def test_a_chain_whose_heaviest_convolution_has_under_64_positions_is_conv_chained_few():
    """``conv_views.FEW_ROWS``: one JAX kernel running a 3×3 512 → 512 convolution and a 1×1 512 → 2048 one (records
    in canonical NCHW). The heaviest is the 3×3 (2·P·512·4608 FLOPs against 2·P·2048·512 for P positions): on 7 × 3²
    maps (63 positions) ``conv:chained:few``, on 4 × 4² (64) and 8 × 3² (72) ``conv:chained``, on 32 × 3² (288: wide,
    not thin) two parts. One thin convolution and a dot (a head) are two contractions: chained too. The same kernel
    with a max pool after it stays one part per convolution, and so does a PyTorch trace's. Without a curve of its
    own ``:few`` reads ``conv:chained``'s, then the family's."""
    from neural_cost import Coverage, Kernel, Operation, Trace
    from neural_cost.analysis.kernel_classes import parts
    from neural_cost.hardware.kernel_model import ClassModel, Curve

    def kernel_of(n, side=3, framework="jax", pool=False, second="conv"):
        maps = (side, side)
        ops = [Operation("c3", "conv", ((n, 512, *maps), (512, 512, 3, 3)), (n, 512, *maps), "float32",
                         attrs={"padding": 1})]  # fmt: skip
        if second == "conv":
            ops.append(Operation("c1", "conv", ((n, 512, *maps), (2048, 512, 1, 1)), (n, 2048, *maps), "float32"))
        else:  # a global mean's result by a dense head's weights
            ops.append(Operation("fc", "matmul", ((n, 512), (512, 1000)), (n, 1000), "float32"))
        if pool:
            ops.append(Operation("mp", "pooling", ((n, 2048, *maps),), (n, 2048, 1, 1), "float32", attrs={"kernel": 3}))
        ops = tuple(ops)
        kernels = (Kernel("ynn_fusion", tuple(range(len(ops))), traffic_bytes=10**7, footprint_bytes=10**7),)
        trace = Trace(ops, Coverage.full(ops), kernels=kernels, kernel_source="hand-written", framework=framework)
        estimate = estimate_trace(trace)
        (row,) = kernel_rows(estimate, SPEC)[0]
        return estimate, row

    estimate, row = kernel_of(7)
    assert kernel_class(estimate, row) == "conv:chained:few"
    assert [part.kernel_class for part in parts(estimate, row, SPEC)] == ["conv:chained:few"]
    assert kernel_class(*kernel_of(4, side=4)) == kernel_class(*kernel_of(8)) == "conv:chained"
    assert kernel_class(*kernel_of(4, second="matmul")) == "conv:chained:few"
    estimate, row = kernel_of(32)
    assert [part.kernel_class for part in parts(estimate, row, SPEC)] == ["conv:wide", "conv:wide"]
    for estimate, row in (kernel_of(4, pool=True), kernel_of(4, framework="torch")):
        assert len(parts(estimate, row, SPEC)) == 2 and "chained" not in kernel_class(estimate, row)
    flat = ClassModel("conv:chained", Curve((-5.0,), (-3.0,)), None, points=3)
    assert borrowed_class(_calibration({"conv:chained": flat}), "conv:chained:few") == "conv:chained"
    family = ClassModel("conv", Curve((-5.0,), (-3.0,)), None, points=3)
    assert borrowed_class(_calibration({"conv": family}), "conv:chained:few") == "conv"
