"""PyTorch's few-row products read by their rows (``hardware/rows_model.py``, ``analysis/linear_rows.py``): a fixed
cost per weight element and one per row and weight element, fitted over the grid's linears."""

from __future__ import annotations

import pytest

from neural_cost.hardware.kernel_model import ClassModel, Curve, KernelCalibration, Point
from neural_cost.hardware.rows_model import MIN_POINTS, fit_rows_model
from neural_cost.hardware.spec import HardwareSpec, MemoryLevel

MiB = 2**20
#: Hand-made times: 10 µs + 200 ps a weight element (800 ps at 16 MiB of weights or more) + 15 ps a row and element
#: (20 ps for results 4096 wide or more).
OVERHEAD, PER_WEIGHT, PER_WEIGHT_PAST, PER_ROW, PER_ROW_WIDE = 10e-6, 200e-12, 800e-12, 15e-12, 20e-12
#: Weight shapes K × N: 1 MiB and 9 MiB of float32, 4 MiB of a 4096-wide result, then two of exactly 16 MiB (past
#: half a 32 MiB cache), one 4096 wide.
WEIGHTS = ((256, 1024), (768, 3072), (256, 4096), (1024, 4096), (2048, 2048))
ROWS = (4, 16, 64, 200)


def _time(rows: int, depth: int, width: int) -> float:
    per = PER_WEIGHT_PAST if 4 * depth * width >= 16 * MiB else PER_WEIGHT
    return OVERHEAD + per * depth * width + (PER_ROW_WIDE if width >= 4096 else PER_ROW) * rows * depth * width


def _points(time=_time) -> list[Point]:
    # the compute and memory times are not read by the rows model (the curves' axes): any positive numbers
    return [
        Point("thin_matmul" if m >= 32 else "thin_matmul:few", 1e-6, 1e-7, time(m, k, n), f"linear {m}x{k}x{n}")
        for m in ROWS
        for k, n in WEIGHTS
    ]


def test_the_rows_model_recovers_hand_made_coefficients_and_predicts_held_out_linears_exactly():
    """20 linears (4 row counts × 5 weight shapes) timed by the hand-made formula: the fit gives back its five
    coefficients, and its five folds predict their held-out linears with no error. 100 rows × 768 → 3072:
    10 µs + 200 ps × 2,359,296 (471.8592 µs) + 15 ps × 100 × 2,359,296 (3,538.944 µs) = 4,020.8032 µs."""
    model = fit_rows_model(_points(), 16 * MiB)
    assert model is not None and model.points == 20
    coefficients = (model.overhead, model.per_weight, model.per_weight_past, model.per_row, model.per_row_wide)
    assert coefficients == pytest.approx((OVERHEAD, PER_WEIGHT, PER_WEIGHT_PAST, PER_ROW, PER_ROW_WIDE), rel=1e-6)
    assert model.median_error == pytest.approx(0.0, abs=1e-6) and model.p90_error == pytest.approx(0.0, abs=1e-6)
    assert model.seconds(100, 768, 3072) == pytest.approx(4020.8032e-6, rel=1e-6)
    # 120 rows × 240 → 8192 (a 7.5 MiB weight, a wide result): 10 µs + 200 ps × 1,966,080 (393.216 µs) + 20 ps ×
    # 120 × 1,966,080 (4,718.592 µs) = 5,121.808 µs
    assert model.seconds(120, 240, 8192) == pytest.approx(5121.808e-6, rel=1e-6)
    assert (
        "10.0 µs + 200 ps a weight element (800 past 16 MiB) + 15.0 ps a row and weight element (20.0 for results "
        "4096 wide or more)"
    ) in model.describe()


def test_only_the_grids_linears_of_four_rows_or_more_are_fitted_and_too_few_fit_none():
    """A one-row linear (a matrix-vector product), a point of another name and one of another class are left out;
    under ``MIN_POINTS`` (12) linears there is no model."""
    others = [
        Point("thin_matmul:few", 1e-6, 1e-7, 1.0, "linear 1x768x3072"),
        Point("thin_matmul", 1e-6, 1e-7, 1.0, "bmm 64x768x3072"),
        Point("conv:wide", 1e-6, 1e-7, 1.0, "linear 64x768x3072"),
    ]
    model = fit_rows_model([*_points(), *others], 16 * MiB)
    assert model is not None and model.points == 20 and model.per_row == pytest.approx(PER_ROW, rel=1e-6)
    assert MIN_POINTS == 12
    assert fit_rows_model(_points()[:11], 16 * MiB) is None


def test_a_coefficient_the_data_would_make_negative_is_left_at_zero_and_more_work_never_predicts_less():
    """Times that fall with the weight (5 ms − 50 ps a weight element + 15 ps a row and element) would fit a negative
    cost per weight element: it is left at 0 (and so its past twin) and the rest fitted again, so more rows, a deeper
    or a wider weight never predict less time."""
    model = fit_rows_model(_points(lambda m, k, n: 5e-3 - 50e-12 * k * n + 15e-12 * m * k * n), 16 * MiB)
    assert model is not None
    assert model.per_weight == 0.0 and model.per_weight_past == 0.0
    assert min(model.overhead, model.per_row, model.per_row_wide) > 0
    # a wide result and a weight past 16 MiB cost more an element, never less: widening 4095 → 4096 and deepening
    # 4095 → 4096 across both steps predicts more
    cheaper = fit_rows_model(_points(lambda m, k, n: 1e-4 + (5e-12 if n >= 4096 else 15e-12) * m * k * n), 16 * MiB)
    assert cheaper is not None and cheaper.per_row_wide == cheaper.per_row
    assert cheaper.seconds(64, 1024, 4096) >= cheaper.seconds(64, 1024, 4095)
    assert cheaper.seconds(64, 4096, 1024) >= cheaper.seconds(64, 4095, 1024)
    for rows, depth, width in ((16, 256, 1024), (64, 768, 3072), (200, 1024, 4096), (4, 256, 4000)):
        base = model.seconds(rows, depth, width)
        assert model.seconds(rows + 1, depth, width) >= base
        assert model.seconds(rows, depth + 64, width) >= base and model.seconds(rows, depth, width + 64) >= base


def _expected(rows: int, framework: str = "torch", dtype: str = "float32"):
    import torch

    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.expected import expected_time
    from neural_cost.costs.estimate import estimate_trace

    levels = (
        MemoryLevel("L2", 1 * MiB, 500e9, per_core=True, instances=2),
        MemoryLevel("L3", 32 * MiB, 200e9),  # the largest cache: weights of 16 MiB or more are past half of it
        MemoryLevel("DRAM", 1 << 36, 100e9),
    )
    spec = HardwareSpec("T", peak_flops=1e12, memory_bandwidth=100e9, kind="cpu", memory_levels=levels)
    flat = Curve((-3.0,), (-2.0,))  # every product read off a curve: 10 ms
    classes = {name: ClassModel(name, flat, None, points=3) for name in ("matmul", "thin_matmul", "thin_matmul:few")}
    calibration = KernelCalibration(framework, spec, classes, machine={}, points=tuple(_points()))
    kind = getattr(torch, dtype)
    layer = torch.nn.Linear(768, 3072, dtype=kind)
    estimate = estimate_trace(adapter_for("torch").trace(layer, (torch.randn(rows, 768, dtype=kind),)))
    return expected_time(estimate, calibration, machine={})


def test_a_pytorch_few_row_linear_is_expected_by_its_rows_and_any_other_product_off_its_curve():
    """A 100-row linear 768 → 3072 (``thin_matmul``) reads the rows model fitted over the calibration's points:
    4,020.8032 µs (the first test's derivation), noted; a 300-row one (``matmul``), a JAX calibration's (no rows
    model: its products stay on their curves) and a 2-row one read the curve (10 ms at its knot, 1 ms of roofline).
    """
    expected = _expected(100)
    (row,) = [row for row in expected.rows if row.kernel_class == "thin_matmul"]
    assert row.seconds == pytest.approx(4020.8032e-6, rel=1e-6)
    assert any(note.startswith("1 few-row product read by their rows, not a curve: 10.0 µs") for note in expected.notes)
    assert not any(note.startswith("extrapolated") for note in expected.notes)  # no curve read, none past its points
    # 300 rows: 2·300·768·3072 + 300·3072 (its bias) = 1,416,499,200 FLOPs, 1.4164992 ms at 1 TFLOP/s, past the
    # curve's one knot (1 ms → 10 ms): 10 ms + 0.4164992 ms at the slope of one (``Curve._beyond``)
    many = _expected(300)
    (row,) = [row for row in many.rows if row.kernel_class == "matmul"]
    assert row.seconds == pytest.approx(10.4164992e-3) and not any("by their rows" in note for note in many.notes)
    # a JAX calibration: 2·100·768·3072 + 100·3072 = 472,166,400 FLOPs, 0.4721664 ms, below the curve's knot (1 ms),
    # where it falls in proportion to the work (``Curve.scaled``): 10 ms × 0.4721664 = 4.721664 ms
    other = _expected(100, framework="jax")
    (row,) = [row for row in other.rows if row.kernel_class == "thin_matmul"]
    assert row.seconds == pytest.approx(4.721664e-3) and not any("by their rows" in note for note in other.notes)
    # 2 rows, under MIN_ROWS (4; the fit has none: one row runs as a matrix-vector product): its curve, not the rows
    # model's 10 µs + 200 ps × 2,359,296 + 15 ps × 2 × 2,359,296 = 552.6336 µs
    two = _expected(2)
    (row,) = [row for row in two.rows if row.kernel_class == "thin_matmul:few"]
    assert row.seconds != pytest.approx(552.6336e-6) and not any("by their rows" in note for note in two.notes)
    # a float64 product of the same 100 rows: the grid's linears are float32 (``rows_model.DTYPE``), its rates not
    # float64's dgemm: its curve, not the rows model's 4,020.8032 µs
    wide = _expected(100, dtype="float64")
    (row,) = [row for row in wide.rows if row.kernel_class.startswith("thin_matmul")]
    assert row.seconds != pytest.approx(4020.8032e-6) and not any("by their rows" in note for note in wide.notes)


def test_calibrate_prints_the_rows_model_of_a_pytorch_calibration_only():
    """``neural-cost calibrate --kernels`` (``calibration_lines``) prints the model fitted over the points, with its
    cross-validated error (0% on the hand-made times); a JAX calibration of the same points has none."""
    from neural_cost.report.expected_text import calibration_lines

    spec = HardwareSpec("T", peak_flops=1e12, memory_bandwidth=100e9, kind="cpu", memory_levels=(
        MemoryLevel("L3", 32 * MiB, 200e9), MemoryLevel("DRAM", 1 << 36, 100e9)))  # fmt: skip
    flat = ClassModel("thin_matmul", Curve((-3.0,), (-2.0,)), None, points=3)
    lines = calibration_lines(KernelCalibration("torch", spec, {"thin_matmul": flat}, points=tuple(_points())))
    assert (
        "few-row products (`thin_matmul`, `thin_matmul:few`) by their rows: 10.0 µs + 200 ps a weight element (800 "
        "past 16 MiB) + 15.0 ps a row and weight element (20.0 for results 4096 wide or more), over 20 linears; ±0% on "
        "held-out linears"
    ) in lines
    jax = calibration_lines(KernelCalibration("jax", spec, {"thin_matmul": flat}, points=tuple(_points())))
    assert not any(line.startswith("few-row products") for line in jax)
