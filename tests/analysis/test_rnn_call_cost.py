"""A recurrent layer's cost per call beside its per-step curve (``wall_points.per_call``, ``kernel_extras.call_cost``).

``nn.LSTM`` packs its weights again at every call: 128 → 256 at batch 16 took 440–458 µs a call and 48–49 µs a
step on a 2-core VM, so one per-step curve of cells of 16–64 steps read a 64-step layer 10–25% slow. Each cell is
timed at a quarter of its steps too; the two walls apart are its steps' own time, the rest its cost per call."""

from __future__ import annotations

import pytest

from neural_cost.adapters.base import MicroProgram
from neural_cost.analysis.expected import expected_time, installed_versions
from neural_cost.analysis.kernel_extras import call_cost, layer_weight_bytes
from neural_cost.analysis.profiled_points import _Prepared
from neural_cost.analysis.wall_points import per_call
from neural_cost.hardware.kernel_model import ClassModel, Curve, KernelCalibration, Point
from tests.analysis.test_kernel_bound import SPEC


def _prepared(walls, fewer_walls, trips=64, fewer=16):
    short = MicroProgram("", lambda: None, trips=fewer)
    program = MicroProgram("lstm 16x64x128->256", lambda: None, trips=trips, fewer_steps=short)
    prepared = _Prepared(program, None, (), 1, None, SPEC)  # type: ignore[arg-type]
    prepared.walls, prepared.fewer_walls = list(walls), list(fewer_walls)
    return prepared


def test_a_layers_cost_per_call_is_its_wall_less_its_steps_own_time():
    """64 steps in 3.45 ms at best (3.5, 3.45), 16 steps in 1.2 ms at best (1.2, 1.25): its steps take
    (3.45 − 1.2) ms ÷ 48 = 46.875 µs each, 3.0 ms for 64; the call the other 0.45 ms."""
    assert per_call(_prepared((3.5e-3, 3.45e-3), (1.2e-3, 1.25e-3)), 3.45e-3) == pytest.approx(0.45e-3)
    assert per_call(_prepared((3.45e-3,), ()), 3.45e-3) is None  # no wall at fewer steps
    assert per_call(_prepared((3.45e-3,), (3.5e-3,)), 3.45e-3) is None  # a stall: the shorter one took longer
    assert per_call(_prepared((3.45e-3,), (0.1e-3,)), 3.45e-3) is None  # steps taking more than the wall
    no_twin = _prepared((3.45e-3,), (1.2e-3,))
    no_twin.program = MicroProgram("lstm", lambda: None, trips=64)
    assert per_call(no_twin, 3.45e-3) is None


def _calibration(points, classes=None):
    return KernelCalibration("torch", SPEC, classes or {}, machine={}, versions=installed_versions("torch"),
                             date="2026-12-06", points=tuple(points))  # fmt: skip


def _call(seconds, size, name="rnn:kept"):
    return Point(name, 1e-6, 0.0, 2e-6, "lstm", call_seconds=seconds, call_bytes=size)


def test_the_cost_per_call_is_a_line_through_the_points_weights():
    """(1 MB, 100 µs), (2 MB, 250 µs), (3 MB, 300 µs): means 2 MB and 216.667 µs; slope
    ((−1e6)(−116.667e-6) + 0 + (1e6)(83.333e-6)) ÷ 2e12 = 200 ÷ 2e12 = 1e-10 s a byte (10 GB/s), intercept
    216.667 − 1e-10 × 2e6 s = 16.667 µs. A line that would cross below 0 goes through the origin instead:
    (1 MB, 300 µs), (2 MB, 700 µs) → slope 4e-10, intercept 500 − 600 = −100 µs → through 0: slope
    (1e6 · 300e-6 + 2e6 · 700e-6) ÷ (1e12 + 4e12) = 1,700 ÷ 5e12 = 3.4e-10 s a byte, intercept 0."""
    intercept, slope = call_cost(
        _calibration([_call(100e-6, 10**6), _call(250e-6, 2 * 10**6), _call(300e-6, 3 * 10**6)])
    )
    assert (intercept, slope) == (pytest.approx(50e-6 / 3), pytest.approx(1e-10))
    origin = call_cost(_calibration([_call(300e-6, 10**6), _call(700e-6, 2 * 10**6)]))
    assert origin == (pytest.approx(0.0, abs=1e-12), pytest.approx(3.4e-10))
    assert call_cost(_calibration([_call(100e-6, 10**6)])) is None  # one point is no line
    assert call_cost(_calibration([Point("matmul", 1e-6, 0.0, 2e-6)] * 3)) is None  # none has a call


def test_the_expected_time_adds_a_layers_cost_per_call_at_its_weights():
    """An LSTM(8 → 16) at 5 steps: W_ih 8 × 64 and W_hh 16 × 64 float32, 2,048 + 4,096 = 6,144 bytes. With the
    line of the test above (16.667 µs + 1e-10 s a byte) its call costs 16.667 + 0.614 = 17.281 µs beside its
    5 steps off the curve; a calibration without call points adds nothing."""
    torch = pytest.importorskip("torch")
    from neural_cost import estimate_trace
    from neural_cost.adapters import adapter_for

    with torch.no_grad():
        estimate = estimate_trace(
            adapter_for("torch").trace(torch.nn.LSTM(8, 16, batch_first=True), (torch.randn(2, 5, 8),))
        )
    index = next(i for i, kernel in enumerate(estimate.kernels) if kernel.name.endswith("mkldnn_rnn_layer"))
    assert layer_weight_bytes(estimate, index) == 6_144
    rnn = ClassModel("rnn", Curve((-7.0, -5.0), (-6.0, -5.0)), None, points=9)
    points = [_call(100e-6, 10**6), _call(250e-6, 2 * 10**6), _call(300e-6, 3 * 10**6)]

    def layer(calibration):
        return next(r for r in expected_time(estimate, calibration, machine={}).rows if r.index == index).seconds

    without = layer(_calibration([], {"rnn": rnn}))
    assert layer(_calibration(points, {"rnn": rnn})) - without == pytest.approx(50e-6 / 3 + 1e-10 * 6_144)


def test_a_points_cost_per_call_travels_with_it_and_an_older_point_has_none():
    point = _call(450e-6, 1_572_864)
    assert Point.from_dict(point.to_dict()) == point
    older = Point.from_dict({"class": "rnn:kept", "compute_seconds": 1e-6, "memory_seconds": 0.0,
                             "measured_seconds": 2e-6, "name": "lstm"})  # fmt: skip
    assert (older.call_seconds, older.call_bytes) == (None, None) and "call_seconds" not in older.to_dict()
