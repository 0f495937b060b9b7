"""Kernel classes finer than the record kinds: a training step's own kernels (read off their
forward class's curve, said in a note, by a calibration without them; calibrated by PyTorch's
grid), one transcendental function's calls, narrow and wide convolutions.

Measured before (a ResNet-style CNN, batch 16, one AdamW step, one process alternating inference
and training): forward convolutions ran at the same ratio to their expectation in both (1.37 and
1.38), while a batch norm computing its batch's statistics ran at 6.3× what the inference curve
expects of it, its backward at 2.4–2.7×, and a convolution's backward at 1.2× the forward's ratio.
"""

from __future__ import annotations

import pytest

from neural_cost import estimate_trace
from neural_cost.analysis.expected import expected_time, installed_versions
from neural_cost.analysis.kernel_classes import TRAINING_CLASSES, borrowed_class, class_model, kernel_class
from neural_cost.analysis.kernels import kernel_rows
from neural_cost.hardware.kernel_model import ClassModel, Curve, KernelCalibration, family
from tests.analysis.test_kernel_bound import SPEC

torch = pytest.importorskip("torch")


def _flat(name: str, seconds_log10: float) -> ClassModel:
    """A curve flat at 10^seconds_log10 s for every kernel under 10 µs of roofline time (all of
    the tiny step's: its largest bound is a few microseconds)."""
    return ClassModel(name, Curve((-5.0,), (seconds_log10,)), None, points=3)


def _calibration(classes: dict[str, ClassModel]) -> KernelCalibration:
    return KernelCalibration(
        "torch", SPEC, classes, machine={}, versions=installed_versions("torch"), date="2026-12-02"
    )


@pytest.fixture(scope="module")
def step():
    """A tiny CNN's training step: conv (no bias) → batch norm → relu → layer norm → linear."""
    from neural_cost.adapters import adapter_for

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.LayerNorm(4 * 6 * 6),
        torch.nn.Linear(4 * 6 * 6, 2),
    )
    estimate = estimate_trace(adapter_for("torch").trace(model, (torch.randn(2, 3, 6, 6),), training=True))
    rows = kernel_rows(estimate, SPEC)[0]
    return estimate, {row.name.rsplit("/", 1)[-1]: kernel_class(estimate, row) for row in rows}


def test_a_training_steps_own_kernels_have_their_own_classes(step):
    _, classes = step
    assert classes["convolution"] == "conv:shallow"  # the forward: 3 → 4 channels, K 27 (conv_views.SHALLOW)
    assert classes["convolution_backward"] == "conv_backward:narrow"  # its weight 4 × 3·3·3: N 4, K 27
    assert classes["native_batch_norm"] == "norm_training"  # computes the batch's statistics
    assert classes["native_batch_norm_backward"] == "norm_backward"
    assert classes["native_layer_norm"] == "norm:layer"  # a layer norm is the same kernel in both
    assert classes["native_layer_norm_backward"] == "norm_backward"


def test_an_inference_batch_norm_and_a_layer_norm_are_members_of_the_norm_family():
    """An inference batch norm (a scale and shift per element) is ``norm:batch``, a layer norm
    (two reductions a row first) ``norm:layer``: each its own curve when calibrated, else the
    family's ``norm``, named in the note; an RMS norm record is the family's own."""
    from neural_cost.analysis.norm_views import norm_class as _norm_class
    from neural_cost.core.records import Operation

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                                torch.nn.Flatten(), torch.nn.LayerNorm(4 * 6 * 6)).eval()  # fmt: skip
    from neural_cost.adapters import adapter_for

    estimate = estimate_trace(adapter_for("torch").trace(model, (torch.randn(2, 3, 6, 6),)))
    rows = kernel_rows(estimate, SPEC)[0]
    classes = {kernel_class(estimate, row) for row in rows}
    assert {"norm:batch", "norm:layer"} <= classes and "norm" not in classes and "norm_training" not in classes
    assert family("norm:batch") == "norm" and family("norm:layer") == "norm"

    old = _calibration({"conv": _flat("conv", -6.0), "norm": _flat("norm", -5.0)})  # no member curves
    expected = expected_time(estimate, old, machine={})
    norms = [row.seconds for row in expected.rows if row.kernel_class.startswith("norm")]
    assert norms == pytest.approx([1e-5, 1e-5])  # both read the family's flat 10 µs
    note = next(n for n in expected.notes if n.startswith("kernels read off another class's curve"))
    assert "norm:batch (1) off norm" in note and "norm:layer (1) off norm" in note
    own = _calibration({**old.classes, "norm:batch": _flat("norm:batch", -5.69897)})  # 2 µs
    seconds = {row.kernel_class: row.seconds for row in expected_time(estimate, own, machine={}).rows}
    assert seconds["norm:batch"] == pytest.approx(2e-6, rel=1e-5) and seconds["norm:layer"] == pytest.approx(1e-5)

    x = (8, 16)
    rms = Operation("rms", "rmsnorm", (x, (16,)), x)
    batch = Operation("bn", "batchnorm", (x, (16,), (16,)), x, attrs={"training": False, "affine": True})
    assert _norm_class([rms]) == "norm" and _norm_class([batch]) == "norm:batch"
    assert _norm_class([batch, Operation("ln", "layernorm", (x, (16,), (16,)), x)]) == "norm"  # mixed: the family


def test_without_their_own_curves_they_are_read_off_their_forward_class_with_a_note(step):
    """conv flat at 1 µs, norm at 2 µs: the backward conv reads 1 µs, the training batch norm and
    both norm backwards 2 µs each; with conv_backward's own curve (3 µs) it reads 3 µs, unnoted."""
    estimate, _ = step
    forward_only = _calibration({"conv": _flat("conv", -6.0), "norm": _flat("norm", -5.69897)})
    expected = expected_time(estimate, forward_only, machine={})
    seconds = {row.name.rsplit("/", 1)[-1]: row.seconds for row in expected.rows}
    assert seconds["convolution_backward"] == pytest.approx(1e-6)
    assert seconds["native_batch_norm"] == pytest.approx(2e-6, rel=1e-5)
    assert seconds["native_batch_norm_backward"] == pytest.approx(2e-6, rel=1e-5)
    assert seconds["native_layer_norm_backward"] == pytest.approx(2e-6, rel=1e-5)
    note = next(n for n in expected.notes if n.startswith("kernels read off another class's curve"))
    assert "conv_backward:narrow (1) off conv" in note and "norm_training (1) off norm" in note
    assert "norm_backward (2) off norm" in note

    family = _calibration({**forward_only.classes, "conv_backward": _flat("conv_backward", -5.52288)})
    expected = expected_time(estimate, family, machine={})
    row = next(r for r in expected.rows if r.name.endswith("convolution_backward"))
    assert row.seconds == pytest.approx(3e-6, rel=1e-5)  # the family's curve, said
    note = next(n for n in expected.notes if n.startswith("kernels read off another class's curve"))
    assert "conv_backward:narrow (1) off conv_backward" in note
    own = _calibration({**forward_only.classes, "conv_backward:narrow": _flat("conv_backward:narrow", -5.52288)})
    expected = expected_time(estimate, own, machine={})
    note = next(n for n in expected.notes if n.startswith("kernels read off another class's curve"))
    assert "conv_backward" not in note


def test_a_borrowed_curve_is_named_and_a_missing_one_is_not_borrowed():
    calibration = _calibration({"conv": _flat("conv", -6.0), "transcendental": _flat("transcendental", -6.0)})
    assert class_model(calibration, "conv_backward") is calibration.classes["conv"]
    assert borrowed_class(calibration, "conv_backward") == "conv"
    assert borrowed_class(calibration, "conv:narrow@loop") == "conv"  # through its loop's base
    assert borrowed_class(calibration, "conv:wide:pooled@xla") == "conv"  # its plain class's, then the family's
    wide = _calibration({**calibration.classes, "conv:wide": _flat("conv:wide", -6.0)})
    assert borrowed_class(wide, "conv:wide:pooled") == "conv:wide"
    assert borrowed_class(calibration, "transcendental:tanh") == "transcendental"
    assert class_model(calibration, "norm_training") is None  # no norm curve either: the roofline
    assert borrowed_class(calibration, "norm_training") is None
    assert borrowed_class(calibration, "conv") is None and borrowed_class(calibration, "conv@loop") is None
    assert TRAINING_CLASSES == {"conv_backward": "conv", "norm_training": "norm", "norm_backward": "norm"}
    assert class_model(calibration, "conv_backward:wide") is calibration.classes["conv"]  # family, then forward
    assert class_model(calibration, "random") is None  # no elementwise curve either
    with_pointwise = _calibration({"elementwise": _flat("elementwise", -6.0)})
    assert borrowed_class(with_pointwise, "random") == "elementwise"


TRAINING_PROGRAMS = {"convolution_backward", "batch_norm", "native_batch_norm_backward", "native_layer_norm_backward"}


def test_the_torch_grid_calibrates_every_training_class():
    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.workload import trace_workload

    adapter = adapter_for("torch")
    found = set()
    for program in adapter.microbenchmarks(quick=True):
        if program.name.split(" ", 1)[0] not in TRAINING_PROGRAMS:
            continue
        estimate = estimate_trace(trace_workload(adapter, program.fn, program.args, program.kwargs))
        found |= {kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0]}
    assert set(TRAINING_CLASSES) <= {family(name) or name for name in found}
    assert "conv_backward:narrow" in found  # the quick grid's two backward convolutions: 16 and 3 channels in


def test_a_calibrated_function_is_its_own_transcendental_class_and_falls_back_to_the_family():
    """tanh and exp each get their own curve; their points also fit the family's, which a
    function the grid does not time alone (erf) reads."""
    from neural_cost.adapters import adapter_for
    from neural_cost.hardware.kernel_model import Point, fit_calibration

    with torch.no_grad():
        estimate = estimate_trace(adapter_for("torch").trace(lambda x: torch.erf(torch.tanh(x)), (torch.randn(64),)))
    classes = [kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0]]
    assert classes == ["transcendental:tanh", "transcendental"]  # tanh alone; erf is the family's
    points = [Point("transcendental:tanh", 0.0, m, 28 * m) for m in (1e-6, 1e-5, 1e-4)]
    points += [Point("transcendental:exp", 0.0, m, 10 * m) for m in (1e-6, 1e-5, 1e-4)]
    calibration = fit_calibration("torch", SPEC, points)
    assert calibration.classes["transcendental:tanh"].points == 3
    assert calibration.classes["transcendental"].points == 6  # the family: both functions' points
    assert class_model(calibration, "transcendental:gelu") is calibration.classes["transcendental"]
    assert class_model(calibration, "transcendental:tanh@loop") is calibration.classes["transcendental:tanh"]
    # tanh's own curve through its points: 28× at 10 µs of memory roofline; the family's lies between
    assert calibration.classes["transcendental:tanh"].seconds(0.0, 1e-5) == pytest.approx(28e-5)
    assert 10e-5 < calibration.classes["transcendental"].seconds(0.0, 1e-5) < 28e-5
    # the family's error is of the curve it serves: cross-validated over all six points as its own
    import statistics

    from neural_cost.hardware.kernel_model import cross_validate

    family = cross_validate([Point("transcendental", p.compute_seconds, p.memory_seconds, p.measured_seconds)
                             for p in points])["transcendental"]  # fmt: skip
    assert len(family) == 6 and calibration.classes["transcendental"].median_error == statistics.median(family)
    assert calibration.median_error is None  # 3 points a member: no member fold fits, none counted twice


def test_a_large_pointwise_result_goes_to_a_buffer_other_than_the_last_calls():
    """A 1 MiB result (262,144 float32) is kept in the ring of 64 MiB: 64 results. Consecutive
    calls write different buffers, and the ring frees one for each it keeps: the 64 results alive
    stay 64 (a ring, not a leak); a 4 KiB result is the op as it is."""
    from neural_cost.adapters._torch.microbench import _RING, _cold_results

    x = torch.randn(262_144)
    ring = _cold_results(torch.relu, x.numel() * 4)
    pointers = [ring(x).data_ptr() for _ in range(3)]
    assert len(set(pointers)) == 3
    for _ in range(200):
        ring(x)
    assert len(_RING.kept) == 64 and _RING.bytes == 64 * 1024 * 1024
    assert _cold_results(torch.relu, 4096) is torch.relu


def test_a_convolution_is_narrow_when_its_channels_times_taps_or_its_outputs_are_under_64():
    """K = input channels × taps, N = output channels, read off the record's canonical weight:
    3→32 3×3 (K 27 < 32, N 32 < 64) shallow; 3→64 (N 64) and 4→32 3×3 (K 36) narrow; 64→64 3×3
    (K 576, N 64) wide; 64→32 1×1 (K 64, N 32) narrow; and the same in JAX's NHWC/HWIO as in
    PyTorch's NCHW/OIHW."""
    from neural_cost.adapters import adapter_for

    def classes(adapter, fn, *args):
        estimate = estimate_trace(adapter.trace(fn, args))
        return [
            kernel_class(estimate, row)
            for row in kernel_rows(estimate, SPEC)[0]
            if "conv" in kernel_class(estimate, row)
        ]

    torch_adapter = adapter_for("torch")
    with torch.no_grad():
        for c_in, c_out, k, expected in (
            (3, 32, 3, "conv:shallow"),
            (3, 64, 3, "conv:narrow"),  # K 27 but N 64: XLA:CPU ran a 3 → 64 stem at 1.4× its roofline
            (4, 32, 3, "conv:narrow"),
            (64, 64, 3, "conv:wide"),
            (64, 32, 1, "conv:pointwise"),  # PyTorch's 1×1 stride-1 layers (conv_views.POINTWISE); JAX's below
        ):
            x, w = torch.randn(2, c_in, 16, 16), torch.randn(c_out, c_in, k, k)  # 2 × 14² positions: not thin
            assert classes(torch_adapter, lambda x, w: torch.nn.functional.conv2d(x, w), x, w) == [expected]
    jax = pytest.importorskip("jax")
    jax_adapter = adapter_for("jax", cross_check=True)  # its compiled kernels, as predict and the benchmark read
    for c_in, c_out, k, expected in ((3, 32, 3, "conv:shallow"), (64, 64, 3, "conv:wide"), (64, 32, 1, "conv:narrow")):
        x, w = jax.numpy.ones((2, 16, 16, c_in)), jax.numpy.ones((k, k, c_in, c_out))

        def conv(x, w):
            return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

        assert classes(jax_adapter, jax.jit(conv), x, w) == [expected]


def test_grouped_and_transposed_convolutions_and_in_place_functions():
    """A 256-channel 3×3 convolution in 16 groups: K = 16 × 9 = 144, N = 256 ÷ 16 = 16 per group:
    narrow (without the groups N read 256: wide; 8 per group would be off oneDNN's blocks, unaligned). A
    transposed convolution's FLOPs follow its input, so the view does not hold: the family's ``conv``.
    ``tanh_`` (in place) is tanh."""
    from neural_cost.adapters import adapter_for

    adapter = adapter_for("torch")

    def classes(fn, *args):
        with torch.no_grad():
            estimate = estimate_trace(adapter.trace(fn, args))
        return [kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0]]

    grouped = classes(lambda x, w: torch.nn.functional.conv2d(x, w, groups=16), torch.randn(2, 256, 8, 8),
                      torch.randn(256, 16, 3, 3))  # fmt: skip
    assert grouped == ["conv:narrow"]
    transposed = classes(lambda x, w: torch.nn.functional.conv_transpose2d(x, w, stride=2), torch.randn(2, 64, 8, 8),
                         torch.randn(64, 32, 4, 4))  # fmt: skip
    assert transposed == ["conv"]
    assert classes(lambda x: x.tanh_(), torch.randn(64)) == ["transcendental:tanh"]


def test_a_loop_members_points_fit_its_familys_loop_curve():
    from neural_cost.hardware.kernel_model import Point, fit_calibration

    points = [Point("conv:narrow@loop", 1e-6 * k, 0.0, 2e-6 * k) for k in (1, 10, 100)]
    calibration = fit_calibration("torch", SPEC, points)
    assert set(calibration.classes) == {"conv:narrow@loop", "conv@loop"}


def test_pooled_points_stay_out_of_the_conv_familys_curve():
    """A pooled convolution (``conv:wide:pooled``: YNNPACK runs it on both cores) is no member of
    ``conv``: the family's curve serves plain transposed and input-dilated convolutions. Plain ones
    at 2× their compute time, pooled ones at 1×: the family reads 2×."""
    from neural_cost.hardware.kernel_model import Point, fit_calibration

    plain = [Point("conv:wide", 1e-4 * k, 1e-5 * k, 2e-4 * k) for k in (1, 2, 4)]
    pooled = [Point("conv:wide:pooled", 1e-4 * k, 1e-5 * k, 1e-4 * k) for k in (1, 2, 4)]
    calibration = fit_calibration("jax", SPEC, plain + pooled)
    assert set(calibration.classes) == {"conv", "conv:wide", "conv:wide:pooled"}
    assert family("conv:wide:pooled") is None and family("conv:wide:pooled@loop") is None
    assert calibration.classes["conv"].points == 3
    assert calibration.classes["conv"].seconds(2e-4, 2e-5) == pytest.approx(4e-4, rel=1e-6)  # the plain knot
    assert calibration.classes["conv:wide:pooled"].seconds(2e-4, 2e-5) == pytest.approx(2e-4, rel=1e-6)


def test_a_kernel_running_several_contractions_is_read_once_per_contraction():
    """XLA fuses conv → scale, shift, relu → 2×2 max pool → conv into one ``ynn_fusion`` (as it
    does a Flax CNN's layers). Read as one kernel it was one large convolution — one entry cost, the
    second layer's efficiency for the 3-channel stem too. It is read as two parts, each a contraction
    and the records after it, each off its own class's curve; the stem's part pools its result
    (``:pooled``: YNNPACK runs such a block on both cores), and reads its plain class without a
    curve of its own. The second, 64 → 64 on 2 × 4² maps (32 positions), is ``conv:small_map``."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.kernel_classes import one_part, parts
    from neural_cost.core.errors import NeuralCostError

    def conv(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def layers(x, w1, w2):
        y = jax.nn.relu(conv(x, w1) * 0.5 + 1.0)
        return conv(jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"), w2)

    args = (jnp.ones((2, 8, 8, 3)), jnp.ones((3, 3, 3, 64)), jnp.ones((3, 3, 64, 64)))
    estimate = estimate_trace(adapter_for("jax", cross_check=True).trace(jax.jit(layers), args))

    def convs(row):
        return (
            0
            if row.index is None
            else sum(estimate.by_operation[i].kind == "conv" for i in estimate.kernels[row.index].operations)
        )

    row = next(r for r in kernel_rows(estimate, SPEC)[0] if convs(r) == 2)
    found = parts(estimate, row, SPEC)
    assert [part.kernel_class for part in found] == ["conv:narrow:pooled", "conv:small_map"]
    # FLOPs at SPEC's 1e12 FLOP/s: the stem 2·8·8 positions × 64 outputs × 27 taps × 2 = 442,368,
    # its epilogue × 0.5, + 1, relu over 8,192 elements (3 × 8,192) and the pool's 3 comparisons for
    # each of 2,048 outputs; the second 2·4·4 × 64 × 576 taps × 2 = 2,359,296, alone.
    assert found[0].compute_seconds == pytest.approx((442_368 + 3 * 8_192 + 3 * 2_048) / 1e12)
    assert found[1].compute_seconds == pytest.approx(2_359_296 / 1e12)
    assert sum(part.memory_seconds for part in found) == pytest.approx(row.memory_seconds)
    # Flat curves, conv:narrow 1 µs and conv:small_map 2 µs: 3 µs; read as one conv:small_map it was 2 µs.
    calibration = _calibration({"conv:narrow": _flat("conv:narrow", -6.0),
                                "conv:small_map": _flat("conv:small_map", -5.69897)})  # fmt: skip
    expected = next(r for r in expected_time(estimate, calibration, machine={}).rows if r.name == row.name)
    assert (expected.kernel_class, expected.seconds) == ("conv:small_map:pooled", pytest.approx(3e-6, rel=1e-5))
    note = next(n for n in expected_time(estimate, calibration, machine={}).notes if "another class's" in n)
    assert "conv:narrow:pooled (1) off conv:narrow" in note
    # with a pooled curve of its own (1.5 µs flat): 1.5 + 2 = 3.5 µs, nothing borrowed
    pooled = _calibration({**calibration.classes, "conv:narrow:pooled": _flat("conv:narrow:pooled", -5.823909)})
    result = expected_time(estimate, pooled, machine={})
    assert next(r for r in result.rows if r.name == row.name).seconds == pytest.approx(3.5e-6, rel=1e-5)
    assert not any("another class's" in n for n in result.notes)
    with pytest.raises(NeuralCostError, match="runs 2 contractions one after another"):
        one_part(estimate, row, SPEC)  # a calibration program such a kernel is no one class's point


def test_records_before_a_kernels_first_contraction_join_the_first():
    """A kernel running add (1,024², 1,048,576 FLOPs), then two 64³ matmuls (2·64³ = 524,288 FLOPs
    each): two parts, the add with the first matmul. At SPEC's 1e12 FLOP/s: 1.572864 µs and
    0.524288 µs."""
    from neural_cost import Coverage, Kernel, Operation, Trace
    from neural_cost.analysis.kernel_classes import parts

    ops = (
        Operation("big", "elementwise", ((1024, 1024), (1024, 1024)), (1024, 1024), "float32", attrs={"op": "add"}),
        Operation("mm0", "matmul", ((64, 64), (64, 64)), (64, 64), "float32"),
        Operation("mm1", "matmul", ((64, 64), (64, 64)), (64, 64), "float32"),
    )
    kernels = (Kernel("fusion.0", (0, 1, 2), traffic_bytes=4_300_000, footprint_bytes=4_300_000, kind="fusion"),)
    estimate = estimate_trace(Trace(ops, Coverage.full(ops), kernels=kernels, kernel_source="hand-written"))
    (row,) = kernel_rows(estimate, SPEC)[0]
    found = parts(estimate, row, SPEC)
    assert [part.kernel_class for part in found] == ["matmul", "matmul"]
    assert [part.compute_seconds for part in found] == [pytest.approx(1.572864e-6), pytest.approx(0.524288e-6)]


def test_a_kernel_lacking_a_class_for_two_of_its_parts_is_one_kernel_in_the_note():
    """One kernel running two narrow convolutions (4→32 and 32→32 channels: N 32 < 64) and a
    wide one (64→64), with only ``conv:wide`` calibrated: the narrow parts are priced at their
    bounds and the note counts one kernel lacking ``conv:narrow``, not its two parts."""
    from neural_cost import Coverage, Kernel, Operation, Trace

    ops = (
        Operation("stem", "conv", ((2, 4, 8, 8), (32, 4, 3, 3)), (2, 32, 6, 6), "float32"),
        Operation("mid", "conv", ((2, 32, 6, 6), (32, 32, 3, 3)), (2, 32, 4, 4), "float32"),
        Operation("wide", "conv", ((2, 64, 16, 16), (64, 64, 3, 3)), (2, 64, 14, 14), "float32"),  # 392 positions
    )
    kernels = (Kernel("fusion.0", (0, 1, 2), traffic_bytes=400_000, footprint_bytes=400_000, kind="fusion"),)
    estimate = estimate_trace(Trace(ops, Coverage.full(ops), kernels=kernels, kernel_source="hand-written"))
    (row,) = kernel_rows(estimate, SPEC)[0]
    from neural_cost.analysis.kernel_classes import parts

    assert [part.kernel_class for part in parts(estimate, row, SPEC)] == ["conv:narrow", "conv:narrow", "conv:wide"]
    result = expected_time(estimate, _calibration({"conv:wide": _flat("conv:wide", -6.0)}), machine={})
    assert "no calibration for kernel class(es) conv:narrow (1): scored at their roofline bound" in result.notes


def test_a_kernels_compute_time_is_shared_by_each_parts_time_at_its_dtypes_peak():
    """A bfloat16 64³ matmul then a float32 one in one kernel, each 2·64³ = 524,288 FLOPs, on a
    device with 4e12 FLOP/s in bfloat16 and 1e12 in float32: the kernel's compute time is
    524,288/4e12 + 524,288/1e12 = 0.65536 µs, of which the bfloat16 part takes 0.131072 µs and the
    float32 part 0.524288 µs (by raw FLOPs, half each: 0.32768 µs)."""
    import dataclasses

    from neural_cost import Coverage, Kernel, Operation, Trace
    from neural_cost.analysis.kernel_classes import parts

    spec = dataclasses.replace(SPEC, peak_flops_by_dtype={"bfloat16": 4e12, "float32": 1e12})
    ops = (
        Operation("mm_bf16", "matmul", ((64, 64), (64, 64)), (64, 64), "bfloat16"),
        Operation("mm_f32", "matmul", ((64, 64), (64, 64)), (64, 64), "float32"),
    )
    kernels = (Kernel("fusion.0", (0, 1), traffic_bytes=65_536, footprint_bytes=65_536, kind="fusion"),)
    estimate = estimate_trace(Trace(ops, Coverage.full(ops), kernels=kernels, kernel_source="hand-written"))
    (row,) = kernel_rows(estimate, spec)[0]
    assert row.compute_seconds == pytest.approx(0.65536e-6)
    found = parts(estimate, row, spec)
    assert [part.compute_seconds for part in found] == [pytest.approx(0.131072e-6), pytest.approx(0.524288e-6)]


def test_a_dropouts_random_draw_is_its_own_class_read_off_the_pointwise_curve_without_one():
    """``F.dropout`` in training on a CPU: a ``bernoulli_`` draw (one element at a time on one core,
    PyTorch's mt19937) and the pointwise scaling. The draw is ``random``; a calibration without
    that class reads it off ``elementwise``'s curve, noted; the torch grid draws it (``bernoulli_``)."""
    from neural_cost.adapters import adapter_for

    adapter = adapter_for("torch")
    estimate = estimate_trace(
        adapter.trace(lambda x: torch.nn.functional.dropout(x, 0.1, True), (torch.randn(64, 64),))
    )
    classes = {row.name.rsplit("/", 1)[-1]: kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0]}
    assert classes["bernoulli_"] == "random"
    assert set(classes.values()) == {"random", "elementwise"}
    expected = expected_time(estimate, _calibration({"elementwise": _flat("elementwise", -6.0)}), machine={})
    assert "random (1) off elementwise" in next(n for n in expected.notes if n.startswith("kernels read off"))
    drawn = {program.name.split(" ", 1)[0] for program in adapter.microbenchmarks(quick=True)}
    assert "bernoulli_" in drawn


def test_a_convolution_backward_reads_the_width_of_the_layer_it_differentiates():
    """The forward view (K = C_in/groups × taps, N = C_out/groups, narrow under 64) read off the
    backward's records, with and without an input gradient: a 7×7 stem 3 → 64 asks none (K 147,
    N 64: wide, as its forward); a 128 → 32 layer with none is narrow (N 32); 64 → 64 in 2 groups
    with one is narrow (K 32 × 9 = 288, N 32); 64 → 128 3×3 wide; a transposed layer's, either
    way, is the family's."""
    from neural_cost.adapters import adapter_for

    adapter, aten = adapter_for("torch"), torch.ops.aten

    def backward_class(c_in, c_out, k, groups=1, input_grad=True, transposed=False):
        x = torch.randn(2, c_in, 8, 8)
        w = torch.randn(c_in, c_out // groups, k, k) if transposed else torch.randn(c_out, c_in // groups, k, k)
        with torch.no_grad():
            y = (torch.nn.functional.conv_transpose2d if transposed else torch.nn.functional.conv2d)(
                x, w, padding=k // 2, groups=groups
            )

        def step(g, x, w):
            return aten.convolution_backward(
                g, x, w, None, [1, 1], [k // 2, k // 2], [1, 1], transposed, [0, 0], groups, [input_grad, True, False]
            )

        with torch.no_grad():
            estimate = estimate_trace(adapter.trace(step, (torch.randn(y.shape), x, w)))
        (name,) = {kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0] if row.index is not None}
        return name

    assert backward_class(3, 64, 7, input_grad=False) == "conv_backward:wide"
    assert backward_class(128, 32, 3, input_grad=False) == "conv_backward:narrow"
    assert backward_class(64, 64, 3, groups=2) == "conv_backward:narrow"
    assert backward_class(64, 128, 3) == "conv_backward:wide"
    assert backward_class(64, 128, 3, transposed=True) == "conv_backward"
    assert backward_class(64, 128, 3, transposed=True, input_grad=False) == "conv_backward"


def test_random_draws_fused_with_other_work_are_that_works_class():
    """A kernel that draws and also does other work (XLA fuses a dropout's bits into the fusion
    that applies them) is the class of that work — a tanh's ``transcendental`` here — never
    ``random``, which is a kernel that only draws (PyTorch's generator, one element at a time).
    The records are PyTorch's (a ``rand_like``, a tanh, a multiply) joined by hand into one kernel."""
    from neural_cost import Coverage, Kernel, Trace
    from neural_cost.adapters import adapter_for

    traced = adapter_for("torch").trace(lambda x: torch.tanh(x) * torch.rand_like(x), (torch.randn(64, 64),))
    ops = tuple(record for record in traced.operations if record.kind in ("rng", "elementwise"))
    assert sorted(op.kind for op in ops) == ["elementwise", "elementwise", "rng"]
    every = tuple(range(len(ops)))
    fused = Kernel("fusion.0", every, traffic_bytes=32_768, footprint_bytes=32_768, kind="fusion")
    alone = Kernel("rng.1", (next(i for i, op in enumerate(ops) if op.kind == "rng"),), traffic_bytes=16_384,
                   footprint_bytes=16_384)  # fmt: skip
    for kernel, expected in ((fused, "transcendental"), (alone, "random")):
        estimate = estimate_trace(Trace(ops, Coverage.full(ops), kernels=(kernel,), kernel_source="hand-written"))
        (row,) = [row for row in kernel_rows(estimate, SPEC)[0] if row.index is not None]
        assert kernel_class(estimate, row) == expected


def test_a_matrix_product_whose_result_is_4096_or_more_wide_is_wide_matmul_read_off_matmul_without_one():
    """A vocabulary projection: linear 16 → 4096 (result (256, 4096)) is ``wide_matmul``; 16 → 4095
    and the 4096 → 16 linear after it (its result 16 wide, however wide its input) stay ``matmul``.
    Read with a calibration of ``matmul`` flat at 1 µs only, the wide kernel reads 1 µs and a note
    says so; with ``wide_matmul`` flat at 3 µs, 3 µs, unnoted; the others read 1 µs either way."""
    from neural_cost.adapters import adapter_for

    model = torch.nn.Sequential(torch.nn.Linear(16, 4096), torch.nn.Linear(4096, 16), torch.nn.Linear(16, 4095))
    estimate = estimate_trace(adapter_for("torch").trace(model, (torch.randn(256, 16),)))
    rows = kernel_rows(estimate, SPEC)[0]
    classes = {row.name: kernel_class(estimate, row) for row in rows if "addmm" in row.name}
    assert list(classes.values()) == ["wide_matmul", "matmul", "matmul"]
    wide = next(name for name, kind in classes.items() if kind == "wide_matmul")

    def seconds(calibration):
        expected = expected_time(estimate, calibration, machine={})
        return {row.name: row.seconds for row in expected.rows}, expected.notes

    def flat(name: str, seconds_log10: float) -> ClassModel:  # 256 rows: up to 44 µs of roofline, flat to 1 ms
        return ClassModel(name, Curve((-3.0,), (seconds_log10,)), None, points=3)

    found, notes = seconds(_calibration({"matmul": flat("matmul", -6.0)}))
    assert found[wide] == pytest.approx(1e-6)
    assert any("wide_matmul (1) off matmul" in n for n in notes)
    both = {"matmul": flat("matmul", -6.0), "wide_matmul": flat("wide_matmul", -5.522879)}  # 10^-5.522879 = 3 µs
    found, notes = seconds(_calibration(both))
    assert found[wide] == pytest.approx(3e-6, rel=1e-5)
    assert [found[name] for name in classes if name != wide] == pytest.approx([1e-6, 1e-6])
    assert not any("off matmul" in n for n in notes)


def test_batched_and_matrix_vector_products_are_never_wide():
    """``bmm`` of (2, 8, 16) × (2, 16, 4096) and ``mv`` of (4096, 16) × (16,) are ``matmul``: the
    wide curve was measured on products of two matrices; a 4096-wide attention score or a long
    matrix-vector product is another kernel."""
    from neural_cost.adapters import adapter_for

    class Products(torch.nn.Module):
        def forward(self, a, b, m, v):
            return torch.bmm(a, b), torch.mv(m, v)

    args = (torch.randn(2, 8, 16), torch.randn(2, 16, 4096), torch.randn(4096, 16), torch.randn(16))
    estimate = estimate_trace(adapter_for("torch").trace(Products(), args))
    rows = [row for row in kernel_rows(estimate, SPEC)[0] if row.name.rsplit("/", 1)[-1] in ("bmm", "mv")]
    assert len(rows) == 2 and {kernel_class(estimate, row) for row in rows} == {"matmul"}


def test_the_torch_grids_wide_linears_are_wide_matmul_points():
    """PyTorch's grid times 256 → 4096, 1024 → 4096 and 512 → 8192 linears at row counts whose result
    stays under 32 MiB (glibc would map a larger one anew every call), and their kernels of 256 rows or more
    are ``wide_matmul`` (traced as the calibration traces them); 768 → 3072 is not. Under 256 rows every one is
    ``thin_matmul``, however wide, and under 32 ``thin_matmul:few``."""
    from neural_cost.adapters import adapter_for

    adapter = adapter_for("torch")
    programs = {p.name: p for p in adapter.microbenchmarks(False)}
    assert {"linear 1024x256x4096", "linear 1024x1024x4096", "linear 512x512x8192"} <= set(programs)
    assert "linear 1024x512x8192" not in programs  # a 32 MiB result: its page faults, not its kernel
    for name, kind in (("linear 512x256x4096", "wide_matmul"), ("linear 512x768x3072", "matmul"),
                       ("linear 200x512x8192", "thin_matmul"), ("linear 64x768x3072", "thin_matmul"),
                       ("linear 1x2048x2048", "thin_matmul:few"),
                       ("linear 16x768x3072", "thin_matmul:few")):  # fmt: skip
        program = programs[name]
        estimate = estimate_trace(adapter.trace(program.fn, program.args))
        rows = kernel_rows(estimate, SPEC)[0]
        classes = [kernel_class(estimate, row) for row in rows]
        assert [c for c in classes if "matmul" in c] == [kind], (name, classes)


def test_a_pytorch_product_of_fewer_than_256_rows_is_thin_matmul_read_off_matmul_without_one():
    """linear 64 → 64 on 255 rows is ``thin_matmul``, on 256 rows ``matmul`` (``THIN_MATMUL``), and so is a batched
    product of 8 rows (``bmm``: not two matrices). Read with a calibration of ``matmul`` flat at 1 µs only, the
    thin kernel reads 1 µs and a note says so; with ``thin_matmul`` flat at 3 µs, 3 µs. The same dot in JAX, on 8
    rows, stays ``matmul``: the class is PyTorch's (MKL's sgemm was measured so, XLA's dots were not)."""
    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.matmul_views import THIN_MATMUL

    assert THIN_MATMUL == 256

    class Products(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(64, 64)

        def forward(self, few, many, a, b):
            return self.linear(few), self.linear(many), torch.bmm(a, b)

    args = (torch.randn(255, 64), torch.randn(256, 64), torch.randn(2, 8, 16), torch.randn(2, 16, 8))
    estimate = estimate_trace(adapter_for("torch").trace(Products(), args))
    rows = {row.name: row for row in kernel_rows(estimate, SPEC)[0]}  # the linear's calls, in order, then bmm
    assert [kernel_class(estimate, rows[name]) for name in ("linear/addmm", "linear/addmm#2", "bmm")] == [
        "thin_matmul",
        "matmul",
        "matmul",
    ]
    thin = "linear/addmm"
    expected = expected_time(estimate, _calibration({"matmul": _flat("matmul", -6.0)}), machine={})
    assert next(row.seconds for row in expected.rows if row.name == thin) == pytest.approx(1e-6)
    assert any("thin_matmul (1) off matmul" in note for note in expected.notes)
    both = {"matmul": _flat("matmul", -6.0), "thin_matmul": _flat("thin_matmul", -5.522879)}  # 10^-5.522879 = 3 µs
    expected = expected_time(estimate, _calibration(both), machine={})
    assert next(row.seconds for row in expected.rows if row.name == thin) == pytest.approx(3e-6, rel=1e-5)
    assert not any("off matmul" in note for note in expected.notes)
    # a training step: the forward product of 100 rows is thin, the backward ones (a weight's gradient of 16
    # rows, the input's of 100) are not: only forward products were measured so
    step = estimate_trace(adapter_for("torch").trace(torch.nn.Linear(64, 16), (torch.randn(100, 64),), training=True))
    found = {(row.name, kernel_class(step, row)) for row in kernel_rows(step, SPEC)[0] if "mm" in row.name}
    assert {kind for name, kind in found if not name.startswith("backward")} == {"thin_matmul"}
    assert {kind for name, kind in found if name.startswith("backward")} == {"matmul"}
    # 31 rows: ``thin_matmul:few`` (``FEW_ROWS``), 32 rows ``thin_matmul``; without a curve of its own the few-row
    # product reads ``thin_matmul``'s (3 µs), noted; with one flat at 10^-5 = 10 µs, 10 µs
    few = estimate_trace(adapter_for("torch").trace(Products(), (torch.randn(31, 64), torch.randn(32, 64), *args[2:])))
    few_rows = {row.name: row for row in kernel_rows(few, SPEC)[0]}
    linears = ("linear/addmm", "linear/addmm#2")  # the 31-row call, then the 32-row one
    assert [kernel_class(few, few_rows[name]) for name in linears] == ["thin_matmul:few", "thin_matmul"]
    expected = expected_time(few, _calibration(both), machine={})
    seconds = {row.name: row.seconds for row in expected.rows}
    assert [seconds[name] for name in linears] == pytest.approx([3e-6, 3e-6], rel=1e-5)
    assert any("thin_matmul:few (1) off thin_matmul" in note for note in expected.notes), expected.notes
    three = {**both, "thin_matmul:few": _flat("thin_matmul:few", -5.0)}
    expected = expected_time(few, _calibration(three), machine={})
    seconds = {row.name: row.seconds for row in expected.rows}
    assert [seconds[name] for name in linears] == pytest.approx([1e-5, 3e-6], rel=1e-5)
    assert not any(" off " in note for note in expected.notes), expected.notes
    jax = pytest.importorskip("jax")
    traced = adapter_for("jax").trace(jax.jit(lambda x, w: x @ w), (jax.numpy.ones((8, 64)), jax.numpy.ones((64, 64))))
    jax_estimate = estimate_trace(traced)
    classes = [kernel_class(jax_estimate, row) for row in kernel_rows(jax_estimate, SPEC)[0]]
    assert "matmul" in classes and "thin_matmul" not in classes


def test_a_jax_dot_with_batch_dimensions_is_batched_matmul_read_off_matmul_without_one():
    """In a jitted JAX program an attention's scores, ``einsum("bqhd,bkhd->bhqk")`` of (2, 8, 4, 16) twice — a
    ``dot_general`` with batch dims b and h, 2 · 4 = 8 products — are ``batched_matmul`` (``BATCHED_MATMUL``); x @ w of
    (2, 8, 64) × (64, 64) (its 2 and 8 free dims, no batch dim), a batched dot of one batch entry, and a batched dot
    in a scan's body (``matmul@loop``'s member, ``loop_dots``) stay ``matmul``. Read with a calibration of ``matmul``
    flat at 1 µs only, the batched kernel reads 1 µs and a note says so; with ``batched_matmul`` flat at 3 µs, 3 µs."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.matmul_views import BATCHED_MATMUL
    from neural_cost.analysis.workload import trace_workload

    def program(q, k, x, w, a, b):
        def step(c, _):
            return jnp.tanh(jnp.einsum("bij,bjk->bik", c, b)), None

        looped, _ = jax.lax.scan(step, a, None, length=3)
        return jnp.einsum("bqhd,bkhd->bhqk", q, k), x @ w, jnp.einsum("bij,bjk->bik", a[:1], b[:1]), looped

    ones = jnp.ones
    args = (
        ones((2, 8, 4, 16)),
        ones((2, 8, 4, 16)),
        ones((2, 8, 64)),
        ones((64, 64)),
        ones((3, 8, 8)),
        ones((3, 8, 8)),
    )
    adapter, fn = adapter_for("jax"), jax.jit(program)
    adapter.benchmark(fn, *args, warmup=1, repeats=1)  # compiles: the trace reads its kernels
    estimate = estimate_trace(trace_workload(adapter, fn, args, {}))
    products = {}
    for row in kernel_rows(estimate, SPEC)[0]:
        records = (
            [estimate.by_operation[i] for i in estimate.kernels[row.index].operations] if row.index is not None else []
        )
        for cost in records:
            if cost.kind == "matmul":
                products[cost.operation.inputs[0]] = (row.name, kernel_class(estimate, row))
    assert {shape: kind for shape, (_, kind) in products.items()} == {
        (2, 8, 4, 16): BATCHED_MATMUL, (2, 8, 64): "matmul", (1, 8, 8): "matmul", (3, 8, 8): "matmul@loop",
    }  # fmt: skip
    batched = products[2, 8, 4, 16][0]

    def calibration(classes):
        return KernelCalibration(
            "jax", SPEC, classes, machine={}, versions=installed_versions("jax"), date="2026-12-06"
        )

    expected = expected_time(estimate, calibration({"matmul": _flat("matmul", -6.0)}), machine={})
    assert next(row.seconds for row in expected.rows if row.name == batched) == pytest.approx(1e-6)
    assert any("batched_matmul (1) off matmul" in note for note in expected.notes)
    both = {"matmul": _flat("matmul", -6.0), BATCHED_MATMUL: _flat(BATCHED_MATMUL, -5.522879)}  # 10^-5.522879 = 3 µs
    expected = expected_time(estimate, calibration(both), machine={})
    assert next(row.seconds for row in expected.rows if row.name == batched) == pytest.approx(3e-6, rel=1e-5)
    assert not any("batched_matmul (1) off" in note for note in expected.notes)


def test_the_jax_grid_times_a_pooled_convolution_as_its_own_class():
    """JAX's conv → relu → 2×2 max pool programs: XLA:CPU fuses a 64 → 128-channel block into one
    ``ynn_fusion`` (``conv:wide:pooled``); a 3 → 16-channel one it leaves a lone HLO convolution
    (``conv:shallow:generic``: no YNNPACK fusion, it runs alone) beside a fusion of the relu and the
    pool (``pool``)."""
    pytest.importorskip("jax")
    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.workload import trace_workload

    adapter = adapter_for("jax")
    programs = {p.name: p for p in adapter.microbenchmarks(quick=True) if p.name.startswith("conv+relu+max_pool")}
    classes = {}
    for name in ("conv+relu+max_pool NHWC 8x64x28x28->128 k3", "conv+relu+max_pool NHWC 1x3x32x32->16 k3"):
        program = programs[name]
        adapter.benchmark(program.fn, *program.args, warmup=1, repeats=1)  # compiles: the trace reads its kernels
        estimate = estimate_trace(trace_workload(adapter, program.fn, program.args, program.kwargs))
        classes[name] = sorted(kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0])
    assert classes == {
        "conv+relu+max_pool NHWC 8x64x28x28->128 k3": ["conv:wide:pooled"],
        "conv+relu+max_pool NHWC 1x3x32x32->16 k3": ["conv:shallow:generic", "pool"],
    }


def test_a_convolution_xla_runs_as_a_lone_instruction_is_generic():
    """A "same" 3×3 convolution of 64 → 64 channels: on an 8×8 input XLA:CPU (the pinned jax 0.10.2)
    runs it as a YNNPACK fusion (``conv:wide``); on a 2×2 input, smaller than its window, as a lone
    ``convolution`` instruction (``conv:small_map:generic``, 16 positions on 2² maps: 2–55 GFLOP/s here, where
    YNNPACK's ran at 40–150), which a calibration without such points reads off ``conv:small_map``, named; no family
    member."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.workload import trace_workload
    from neural_cost.hardware.kernel_model import Point, fit_calibration

    adapter = adapter_for("jax")
    conv = jax.jit(lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                             dimension_numbers=("NHWC", "HWIO", "NHWC")))  # fmt: skip
    found = {}
    for side in (8, 2):
        args = (jnp.ones((4, side, side, 64)), jnp.ones((3, 3, 64, 64)))
        adapter.benchmark(conv, *args, warmup=1, repeats=1)  # compiles: the trace reads its kernels
        estimate = estimate_trace(trace_workload(adapter, conv, args, {}))
        rows = [row for row in kernel_rows(estimate, SPEC)[0] if row.index is not None]
        found[side] = [(estimate.kernels[row.index].kind, kernel_class(estimate, row)) for row in rows]
    # beside the lone convolution, a fusion that lays out its operand (a copy)
    assert found == {8: [("fusion", "conv:wide")], 2: [("convolution", "conv:small_map:generic"), ("fusion", "copy")]}
    assert family("conv:small_map:generic") is None
    points = [Point("conv:small_map", 1e-4 * k, 1e-5 * k, 2e-4 * k) for k in (1, 2, 4)]
    calibration = fit_calibration("jax", SPEC, points)
    assert class_model(calibration, "conv:small_map:generic") is calibration.classes["conv:small_map"]
    assert borrowed_class(calibration, "conv:small_map:generic") == "conv:small_map"


def test_only_a_pool_after_the_convolution_makes_it_pooled():
    """``_pooled`` reads the records in order: a pool after the kernel's first convolution pools its
    result (``:pooled``); one before it pools its input (plain); a backward class is never pooled."""
    from types import SimpleNamespace

    from neural_cost.analysis.kernel_classes import _pooled

    def costs(*kinds):
        return [SimpleNamespace(kind=kind) for kind in kinds]

    assert _pooled("conv:wide", costs("conv", "elementwise", "pooling")) == "conv:wide:pooled"
    assert _pooled("conv:narrow", costs("pooling", "conv", "elementwise")) == "conv:narrow"
    assert _pooled("conv:wide", costs("conv")) == "conv:wide"
    assert _pooled("conv_backward:wide", costs("conv", "pooling")) == "conv_backward:wide"


def test_a_pytorch_mixture_of_experts_product_reads_its_rows_per_expert():
    """``_grouped_mm`` of M tokens through G experts' weights (``grouped_matmul``) runs one product an expert on
    the CPU: 1,016 tokens through 4 experts is 254 rows an expert, ``thin_matmul``; 1,024 through 4 is 256 rows,
    ``matmul`` (``THIN_MATMUL``). Its weight gradient's layout, (M, K) · (M, N) → (G, K, N), stays ``matmul``."""
    from neural_cost.adapters import adapter_for

    def experts(tokens):
        return torch._grouped_mm(tokens, torch.randn(4, 64, 64), torch.tensor([256, 512, 768, len(tokens)]).int())

    for tokens, kind in ((1016, "thin_matmul"), (1024, "matmul")):
        estimate = estimate_trace(adapter_for("torch").trace(experts, (torch.randn(tokens, 64),)))
        (row,) = [row for row in kernel_rows(estimate, SPEC)[0] if "grouped" in row.name]
        assert kernel_class(estimate, row) == kind, tokens
    weights = estimate_trace(
        adapter_for("torch").trace(
            lambda x, dy: torch._grouped_mm(x.t(), dy, torch.tensor([4, 8, 12, 16]).int()),
            (torch.randn(16, 64), torch.randn(16, 64)),
        )
    )
    (row,) = [row for row in kernel_rows(weights, SPEC)[0] if "grouped" in row.name]
    assert kernel_class(weights, row) == "matmul"
