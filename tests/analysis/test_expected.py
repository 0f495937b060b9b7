"""The expected-time model: curves by hand, monotone by property, fallback, flags, refusals.

Curve by hand: knots (log10 roofline s, log10 s) = (-6, -5), (-4, -4).
  roofline 1e-7 s (below the first knot): flat at the overhead floor, 10⁻⁵ s;
  roofline 1e-5 s (halfway in log between the knots): 10^(-5 + 0.5·1) = 10^-4.5 s;
  roofline 1e-2 s (above the last knot): the last segment's marginal cost (1e-4 − 1e-5)/(1e-4 − 1e-6)
  = 0.909 is kept between min(1, ratio 1) = 1 and the ratio 1 → 1 per roofline second:
  1e-4 + (1e-2 − 1e-4) · 1 = 10⁻² s.

Expected time by hand, on the test spec of test_kernel_bound.py (peak 1 TFLOP/s, L1d 1e12 B/s,
L2 500e9 B/s, L3 unmeasured, DRAM 100e9 B/s):
  fusion.0 (mm + add): compute 528.384 ns, memory 98.304 ns (L2) → class matmul;
    matmul's compute curve: knots (-7, -6), (-5, -5): log10(528.384e-9) = -6.27706 → between the
    knots: -6 + (0.72294/2)·1 = -5.63853 → 2.29867 µs. Its memory curve is the same curve (one side only).
  copy.1 (no record): class copy (XLA's copy opcode) — no calibration: its roofline bound, 20 µs.
  loop.2 (no record, 10 executions): class other: its bound, 10 ns.
  unmapped record "big": class unmapped — no calibration: its bound 125.82912 µs.
  Kernels: 2.29867 + 20 + 0.01 + 125.82912 = 148.13779 µs; floor 1 ms → 1.14813779 ms.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neural_cost import Coverage, Trace, estimate_trace
from neural_cost.analysis.expected import calibration_flags, expected_time, installed_versions, kernel_class
from neural_cost.core.errors import HardwareError, RecordError
from neural_cost.hardware.kernel_model import (
    ClassModel,
    Curve,
    KernelCalibration,
    Point,
    fit_calibration,
    fit_class,
    fit_curve,
    load_calibration,
    save_calibration,
)
from tests.analysis.test_kernel_bound import KERNELS, OPS, SPEC
from tests.helpers import glibc_defaults


def test_a_curve_by_hand():
    curve = Curve((-6.0, -4.0), (-5.0, -4.0))
    assert curve(1e-7) == pytest.approx(1e-5)
    assert curve(1e-5) == pytest.approx(10**-4.5)
    assert curve(1e-2) == pytest.approx(1e-2)
    assert curve(0.0) == pytest.approx(1e-5)  # no work on this side: the floor


def test_a_curve_must_not_decrease():
    with pytest.raises(HardwareError, match="must not decrease"):
        Curve((-6.0, -5.0), (-4.0, -5.0))


def _calibration(classes) -> KernelCalibration:
    return KernelCalibration(
        "torch", SPEC, classes, machine={}, versions=installed_versions("torch"), date="2026-12-01"
    )


def _estimate():
    return estimate_trace(
        Trace(OPS, Coverage.full(OPS), kernels=KERNELS, kernel_source="hand-written", framework="torch")
    )


def test_expected_time_by_hand_with_roofline_fallback():
    matmul = ClassModel("matmul", Curve((-7.0, -5.0), (-6.0, -5.0)), None, points=9)
    expected = expected_time(_estimate(), _calibration({"matmul": matmul}), floor_seconds=1e-3, machine={})
    rows = {row.name: row for row in expected.rows}
    # a 64-row PyTorch product: ``thin_matmul``, read off matmul's curve without one of its own
    assert rows["fusion.0"].kernel_class == "thin_matmul" and rows["fusion.0"].basis == "model"
    x = math.log10(528.384e-9)
    assert rows["fusion.0"].seconds == pytest.approx(10 ** (-6 + (x + 7) / 2))
    assert rows["fusion.0"].seconds == pytest.approx(2.29867e-6, rel=1e-5)
    assert rows["copy.1"].basis == "roofline" and rows["copy.1"].seconds == pytest.approx(20e-6)
    assert rows["(unmapped records)"].kernel_class == "unmapped"
    assert expected.kernel_seconds == pytest.approx(2.29867e-6 + 20e-6 + 10e-9 + 125.82912e-6, rel=1e-6)
    assert expected.seconds == pytest.approx(expected.kernel_seconds + 1e-3)
    # copy.1 runs no record but is XLA's copy (class copy, no curve here); loop.2 names no opcode
    notes = expected.notes
    assert any("no calibration for kernel class(es) copy (1), other (1): scored at" in note for note in notes)
    assert "the records no kernel of the compiled program runs are scored at their roofline bound" in notes


def test_kernel_classes_follow_the_heaviest_record():
    estimate = _estimate()
    from neural_cost.analysis.kernels import kernel_rows

    rows = {row.name: row for row in kernel_rows(estimate, SPEC)[0]}
    assert kernel_class(estimate, rows["fusion.0"]) == "thin_matmul"  # a 64-row PyTorch matmul fused with an add
    assert kernel_class(estimate, rows["copy.1"]) == "copy"  # runs no record of ours: XLA's copy
    assert kernel_class(estimate, rows["loop.2"]) == "other"  # nor this, whose name says nothing


def test_a_program_with_no_operations_is_refused():
    empty = estimate_trace(Trace((), Coverage(total=0, modeled=0)))
    with pytest.raises(RecordError, match="no operations"):
        expected_time(empty, _calibration({}), machine={})


def test_another_machine_framework_or_version_is_flagged():
    calibration = KernelCalibration(
        "jax", SPEC, {}, machine={"cpu_model": "Other CPU"}, versions={"jax": "0.0.1"}, date="2025-01-01"
    )
    flags = calibration_flags(calibration, "torch", machine={"cpu_model": "This CPU"})
    assert any("jax kernels, the program runs in torch" in f for f in flags)
    assert any("calibrated with jax 0.0.1, installed" in f for f in flags)
    assert any("another machine (Other CPU, 2025-01-01)" in f for f in flags)
    here = installed_versions("torch")
    same = KernelCalibration("torch", SPEC, {}, machine={"cpu_model": "This CPU"}, versions=here)
    assert calibration_flags(same, "torch", machine={"cpu_model": "This CPU"}) == ()
    # a calibration that does not say where or with what it was made is flagged, never trusted
    unsaid = KernelCalibration("torch", SPEC, {}, machine={}, versions={"torch": here["torch"]})
    assert calibration_flags(unsaid, "torch", machine={"cpu_model": "This CPU"}) == (
        "the calibration does not say which neural-cost kernel model version(s) made it",
        "the calibration does not say which machine it was made on",
    )


def test_rescoring_a_saved_report_with_other_timed_runs_gives_the_same_expected_time(tmp_path):
    """The expected time comes from the trace, the calibration and the floor: never from the
    program's own timed runs. A saved report with its samples replaced reloads with the same
    expected time and line, only the observed ratio moves."""
    from neural_cost import analyze_gap
    from neural_cost.report.load import load_report
    from tests.helpers import cpu_measurement

    matmul = ClassModel("matmul", Curve((-7.0, -5.0), (-6.0, -5.0)), None, points=9)
    expected = expected_time(_estimate(), _calibration({"matmul": matmul}), 1e-4, machine={})
    report = analyze_gap(_estimate(), cpu_measurement((200e-6,) * 5), SPEC, expected=expected)
    data = report.to_dict()
    data["measurement"]["samples_seconds"] = [9e-3] * 7
    data["measurement"]["runs"] = 7
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    reloaded = load_report(path)
    assert reloaded.observed_seconds == pytest.approx(9e-3)
    assert reloaded.expected is not None and reloaded.expected.seconds == report.expected.seconds
    line = next(x for x in reloaded.render().splitlines() if "expected: " in x)
    assert "expected: 248.1 µs" in line and "observed is 36.27× it" in line  # 9 ms / 248.138 µs


def test_the_finding_names_modeled_kernels_only_and_never_for_another_machine():
    """copy.1 scored at its bound (no class) measured 5× it: no expectation to be above. fusion.0
    (matmul, expected 2.299 µs) measured 100 µs: 43.5× — named. With another machine's
    calibration (flagged) nothing is named. Measured times are scaled for the profiler's own
    slowdown before the comparison."""
    from neural_cost import analyze_gap
    from neural_cost.core.profile import MeasuredKernel, Profile
    from tests.helpers import cpu_measurement

    matmul = ClassModel("matmul", Curve((-7.0, -5.0), (-6.0, -5.0)), None, points=9)
    profile = Profile(
        runs=1,
        wall_seconds=300e-6,
        kernels=(MeasuredKernel(0, 100e-6, 1), MeasuredKernel(1, 100e-6, 1)),
        kernel_seconds=200e-6,
        source="hand",
    )

    def finding(calibration, machine):
        expected = expected_time(_estimate(), calibration, machine=machine)
        report = analyze_gap(_estimate(), cpu_measurement((300e-6,) * 5), SPEC, profile=profile, expected=expected)
        return next((f.message for f in report.findings if f.code == "above_expected"), None)

    message = finding(_calibration({"matmul": matmul}), {})
    assert message is not None and "fusion.0: 43.5× its expected time" in message and "copy.1" not in message
    other = KernelCalibration("torch", SPEC, {"matmul": matmul}, machine={"cpu_model": "Other"})
    assert finding(other, {"cpu_model": "This"}) is None
    # profiled runs of 600 µs against timed runs of 300 µs, kernels filling 350 µs of them: the
    # profiler doubled what it watched, so 100 µs measured counts as 50 µs unwatched:
    # 50 / 2.29867 = 21.75× — still named, scaled and said
    from dataclasses import replace

    profile = replace(
        profile,
        wall_seconds=600e-6,
        kernels=(MeasuredKernel(0, 100e-6, 1), MeasuredKernel(1, 250e-6, 1)),
        kernel_seconds=350e-6,
    )
    message = finding(_calibration({"matmul": matmul}), {})
    assert message is not None and "fusion.0: 21.8× its expected time (100.0 µs measured" in message
    assert "(measured times ×0.50: the profiled runs took 600.0 µs each, the timed runs 300.0 µs)" in message
    # the same 600 µs runs with kernels in 200 µs of them (a third): the slowdown is dispatch's, not
    # the kernels' (Profile.unwatched_ratio): 100 µs stands, 43.5×, nothing scaled
    profile = replace(
        profile, kernels=(MeasuredKernel(0, 100e-6, 1), MeasuredKernel(1, 100e-6, 1)), kernel_seconds=200e-6
    )
    message = finding(_calibration({"matmul": matmul}), {})
    assert message is not None and "fusion.0: 43.5× its expected time" in message and "measured times ×" not in message


def test_a_stall_in_one_profiled_run_names_no_kernel():
    """Three profiled runs; fusion.0 (matmul, expected 2.29867 µs) ran 2 µs in two of them and
    stalled 3 ms in the third (the shared machine). Their mean, (2 + 2 + 3000) / 3 = 1.001 ms, would
    be 435× its expectation; its measured time is its median run's, 2 µs, under 1.5× — nothing is
    named. The same kernel at 3 ms in every run is named: 3 ms / 2.29867 µs = 1305.1×."""
    from neural_cost import analyze_gap
    from neural_cost.core.profile import MeasuredKernel, Profile, ProfileEvent
    from tests.helpers import cpu_measurement

    matmul = ClassModel("matmul", Curve((-7.0, -5.0), (-6.0, -5.0)), None, points=9)
    expected = expected_time(_estimate(), _calibration({"matmul": matmul}), machine={})

    def finding(durations):
        events = tuple(ProfileEvent(0, i * 1e-3, d) for i, d in enumerate(durations))
        kernels = (MeasuredKernel(0, sum(durations), 3), MeasuredKernel(1, 6e-6, 3))
        profile = Profile(3, 3 * 3.1e-3, kernels, sum(durations) + 6e-6, "hand", events=events)
        report = analyze_gap(_estimate(), cpu_measurement((3.1e-3,) * 5), SPEC, profile=profile, expected=expected)
        return next((f.message for f in report.findings if f.code == "above_expected"), None)

    assert finding((2e-6, 2e-6, 3e-3)) is None
    message = finding((3e-3, 3e-3, 3e-3))
    assert message is not None and "fusion.0: 1305.1× its expected time (3.000 ms measured, " in message
    # 1, 1 and 3 ms: a mean of 5/3 = 1.667 ms a run, its median run 1 ms: 1 ms / 2.29867 µs = 435.0×
    message = finding((1e-3, 1e-3, 3e-3))
    assert message is not None
    assert "fusion.0: 435.0× its expected time (1.000 ms measured, " in message


def test_a_compute_knot_is_its_bins_median_efficiency_a_memory_knot_its_median_time():
    """One bin of three points (roofline → measured): 100 µs → 400 µs (4×), 200 µs → 100 µs (0.5×),
    400 µs → 400 µs (1×). Median roofline time 200 µs; median measured time 400 µs (a 4× point's
    time at a 0.5× point's work); median ratio 1×: 200 µs. A class's compute curve reads the ratio,
    its memory curve the time."""
    pairs = [(1e-4, 4e-4), (2e-4, 1e-4), (4e-4, 4e-4)]
    by_time, by_ratio = fit_curve(pairs), fit_curve(pairs, by_ratio=True)
    assert by_time is not None and by_ratio is not None
    assert by_time.xs == by_ratio.xs == pytest.approx((math.log10(2e-4),))
    assert by_time.ys == pytest.approx((math.log10(4e-4),)) and by_ratio.ys == pytest.approx((math.log10(2e-4),))
    compute = [Point("conv", r, r / 100, m, "p") for r, m in pairs]  # compute-side: compute ≫ memory
    memory = [Point("conv", r / 100, r, m, "p") for r, m in pairs]
    assert fit_class("conv", compute).compute.ys == by_ratio.ys  # type: ignore[union-attr]
    assert fit_class("conv", memory).memory.ys == by_time.ys  # type: ignore[union-attr]


def test_a_curve_with_a_nan_knot_is_refused():
    with pytest.raises(HardwareError, match="finite"):
        Curve((float("nan"),), (float("nan"),))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(1e-9, 1e-1), st.floats(1e-9, 1e-1), st.floats(1e-7, 1.0)),
        min_size=6,
        max_size=60,
    ),
    st.floats(1e-9, 1e-1),
    st.floats(1e-9, 1e-1),
    st.floats(1.0, 100.0),
)
def test_more_work_never_predicts_less_time(raw, compute, memory, factor):
    """Whatever the measurements, a fitted class is monotone: more FLOPs (or bytes) never
    predicts less time — read as expected_time reads it (down to the class's quickest point below
    its first knots), as a calibration without points reads it, and a member's family the same."""
    points = [Point("conv:wide" if i % 2 else "conv:narrow", c, m, t) for i, (c, m, t) in enumerate(raw)]
    calibration = fit_calibration("torch", SPEC, points)
    floors = calibration.floors()
    for name in ("conv:wide", "conv:narrow", "conv"):
        model = calibration.classes.get(name)
        if model is None:
            continue
        for floor in (floors[name], None):
            base = model.seconds(compute, memory, floor)
            assert model.seconds(compute * factor, memory, floor) >= base * (1 - 1e-12)
            assert model.seconds(compute, memory * factor, floor) >= base * (1 - 1e-12)


def test_fit_is_robust_to_a_stalled_run():
    """Twelve points on time = 2 × roofline, one of them stalled 1,000×: the knots are bin
    medians, so the curve still reads 2 × roofline there."""
    pairs = [(10.0**-k, 2 * 10.0**-k) for k in range(3, 9) for _ in range(2)]
    pairs[5] = (pairs[5][0], pairs[5][1] * 1000)
    curve = fit_curve(pairs)
    assert curve is not None
    assert curve(1e-6) == pytest.approx(2e-6, rel=1e-9)


def test_a_saved_calibration_predicts_identically(tmp_path):
    points = [Point("matmul", 10.0**-k, 10.0 ** (-k - 1), 3 * 10.0**-k, f"p{k}") for k in range(3, 9) for _ in range(2)]
    calibration = fit_calibration("torch", SPEC, points, versions={"torch": "x"}, date="2026-12-01")
    path = save_calibration(calibration, tmp_path / "cal.json")
    loaded = load_calibration(path)
    estimate = _estimate()
    assert (
        expected_time(estimate, loaded, machine={}).seconds == expected_time(estimate, calibration, machine={}).seconds
    )
    assert loaded.points == calibration.points


def test_a_broken_calibration_file_is_a_clear_error(tmp_path):
    path = tmp_path / "cal.json"
    path.write_text("{}")
    with pytest.raises(HardwareError, match="not a schema-1 kernel calibration"):
        load_calibration(path)
    with pytest.raises(HardwareError, match="no such kernel calibration file"):
        load_calibration(tmp_path / "missing.json")


def test_the_report_shows_the_expected_time_and_keeps_it_in_its_json(tmp_path):
    """Between the bound and the observed line: 1.148 ms (the hand total above, floor 1 ms), the
    observed 200 µs is 0.17× it; the kernel table has the expected column (fusion.0: 2.3 µs)."""
    from neural_cost import analyze_gap
    from neural_cost.report.load import load_report
    from tests.helpers import cpu_measurement

    matmul = ClassModel("matmul", Curve((-7.0, -5.0), (-6.0, -5.0)), None, points=9, median_error=0.09)
    calibration = KernelCalibration(
        "torch", SPEC, {"matmul": matmul}, versions=installed_versions("torch"), date="2026-12-01", median_error=0.09
    )
    expected = expected_time(_estimate(), calibration, 1e-3, machine={})
    report = analyze_gap(_estimate(), cpu_measurement((200e-6,) * 5), SPEC, expected=expected)
    text = report.render(by="kernel")
    lines = text.splitlines()
    line = next(i for i, text_line in enumerate(lines) if "expected: 1.148 ms" in text_line)
    assert "(calibrated model; ±9% on its own held-out calibration points; framework floor 1.000 ms)" in lines[line]
    assert "observed is 0.17× it" in lines[line]
    assert any(after.strip().startswith("observed") for after in lines[line + 1 :])  # after: the observed line
    assert "expected" in next(row for row in lines if "kernel" in row and "scopes" in row)
    table = lines[next(i for i, row in enumerate(lines) if "kernel" in row and "scopes" in row) :]
    assert next(row for row in table if "fusion.0" in row).endswith("528.4 ns   0.4%    2.3 µs")
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report.to_dict()))
    reloaded = load_report(path)
    assert reloaded.expected == report.expected


def test_past_the_last_knot_an_overhead_point_is_not_stretched():
    """One knot at roofline 1 ns measured 1 µs (overhead: 1,000× the roofline): a kernel of
    roofline 1 ms is expected at 1 µs + (1 ms − 1 ns) · 1 (the work at the peak), not 1,000 × 1 ms."""
    curve = Curve((-9.0,), (-6.0,))
    assert curve(1e-3) == pytest.approx(1e-6 + (1e-3 - 1e-9))


def test_four_or_five_points_over_a_wide_span_make_two_knots_whose_slope_carries_the_curve_past_them():
    """JAX's depthwise layers: five memory-side points at 300× their roofline, at 2, 6, 46, 46 and
    92 µs of it (a 46× span, over SPLIT_SPAN's 2×). Two bins, [2, 6] and [46, 46, 92]: knots at
    √(2·6) = 3.4641 µs → 1.0392 ms and 46 µs → 13.8 ms. The last segment's marginal cost is
    (13.8 ms − 1.0392 ms) / (46 − 3.4641 µs) = 300 (the ratio there too), so a layer of 400 µs
    reads 13.8 ms + 354 µs · 300 = 120 ms; one knot (at 46 µs → 13.8 ms) had added the work at the
    peak: 13.8 ms + 354 µs = 14.154 ms, 8.5× under, as three points still do. Four points within 2×
    stay one knot."""
    pairs = [(r * 1e-6, 300 * r * 1e-6) for r in (2, 6, 46, 46, 92)]
    curve = fit_curve(pairs)
    assert curve is not None
    assert curve.xs == pytest.approx((math.log10(12**0.5 * 1e-6), math.log10(46e-6)))
    assert curve.ys == pytest.approx((math.log10(300 * 12**0.5 * 1e-6), math.log10(13.8e-3)))
    assert curve(400e-6) == pytest.approx(0.12)
    three = fit_curve(pairs[2:])  # too few to split: one knot, the work past it at the peak
    assert three is not None and three(400e-6) == pytest.approx(14.154e-3)
    narrow = fit_curve([(r * 1e-6, 300 * r * 1e-6) for r in (10, 11, 12, 19)])  # 1.9×: one knot
    assert narrow is not None and len(narrow.xs) == 1


def test_below_a_curves_first_knot_a_two_curve_class_falls_with_the_work_to_its_floor():
    """TensorFlow's depthwise class: compute-side points only at its large end (one knot, 100 µs of
    roofline time measured 571 µs), memory-side ones from 10 µs (100 µs) to 100 µs (500 µs). A
    layer of 40 µs compute and 20 µs memory time read the compute curve's flat 571 µs before; now
    the compute side falls with the work, 571 µs × 40/100 = 228.4 µs, above the class's floor
    (100 µs, the smaller first time) and the memory side's 10^(−4 + log10 2 · log10 5) = 162.3 µs.
    A tiny layer (1 µs each side) reads the floor, 100 µs, not 571 µs."""
    model = ClassModel(
        "depthwise_conv", Curve((-4.0,), (math.log10(571e-6),)), Curve((-5.0, -4.0), (-4.0, math.log10(5e-4))), 20
    )
    assert model.seconds(40e-6, 20e-6) == pytest.approx(228.4e-6)
    assert model.memory(20e-6) == pytest.approx(10 ** (-4 + math.log10(2) * math.log10(5)))
    assert model.seconds(1e-6, 1e-6) == pytest.approx(100e-6)
    assert model.seconds(1e-4, 0.0) == pytest.approx(571e-6)  # at the knot: its time
    assert model.seconds(1e-4 * (1 - 1e-9), 0.0) == pytest.approx(571e-6)  # just below it: no step
    assert model.seconds(0.0, 0.0) == pytest.approx(100e-6)  # no work on either side: the floor
    one_sided = ClassModel("matmul", Curve((-4.0,), (math.log10(571e-6),)), None, 3)
    assert one_sided.seconds(1e-6, 1e-6) == pytest.approx(571e-6)  # one curve: flat below its knot, as before


def test_a_loop_kernel_has_its_own_class_and_falls_back_to_its_base():
    """fusion.0 run 5 times per run is ``matmul@loop`` (in a loop a 64-row product is no ``thin_matmul``): per
    execution compute 528.384 ns (its records' FLOPs are already over all executions: 528,384 / 5 per execution
    → 105.677 ns).
    Without a loop model it uses matmul's (flat 1 µs → 5 µs); with one (flat 0.1 µs) 0.5 µs."""
    from neural_cost import Kernel
    from neural_cost.analysis.kernels import kernel_rows

    kernels = (Kernel("fusion.0", (0, 1), traffic_bytes=49_152, footprint_bytes=49_152, executions=5, kind="fusion"),)
    estimate = estimate_trace(Trace(OPS, Coverage.full(OPS), kernels=kernels, kernel_source="hand", framework="torch"))
    row = next(r for r in kernel_rows(estimate, SPEC)[0] if r.name == "fusion.0")
    assert kernel_class(estimate, row) == "matmul@loop"
    flat = ClassModel("matmul", Curve((-5.0,), (-6.0,)), None, points=3)
    loop = ClassModel("matmul@loop", Curve((-5.0,), (-7.0,)), None, points=3)
    base_only = expected_time(estimate, _calibration({"matmul": flat}), machine={})
    assert next(r for r in base_only.rows if r.name == "fusion.0").seconds == pytest.approx(5e-6)
    with_loop = expected_time(estimate, _calibration({"matmul": flat, "matmul@loop": loop}), machine={})
    assert next(r for r in with_loop.rows if r.name == "fusion.0").seconds == pytest.approx(5e-7)


def test_calibrate_kernels_true_returns_the_kernel_model(monkeypatch):
    """``neural_cost.calibrate(kernels=True, framework=...)`` measures the framework's kernel model
    afresh (recalibrate) and returns it with the spec it was scored on; the measuring itself is
    ``kernel_calibration`` (replaced here: a real one takes minutes)."""
    import neural_cost
    from neural_cost.analysis import calibrate_kernels

    made = _calibration({"matmul": ClassModel("matmul", Curve((-6.0,), (-5.0,)), None, points=3)})
    seen = {}

    def fake(adapter, *, recalibrate=False, fresh=False, progress=None):
        seen.update(framework=adapter.framework, recalibrate=recalibrate, fresh=fresh)
        return made

    monkeypatch.setattr(calibrate_kernels, "kernel_calibration", fake)
    spec, calibration = neural_cost.calibrate(kernels=True, framework="torch")
    assert calibration is made and spec is made.hardware
    assert seen == {"framework": "torch", "recalibrate": True, "fresh": False}


def test_large_results_on_fresh_pages_give_the_upper_end():
    """At 1e-10 s per fresh byte: the results of at least 128 KiB are big's (1024, 1024) float32,
    4,194,304 B (mm's and add's (64, 64) are 16 KiB) → 419.4304 µs more if they land on fresh
    pages (1.14814 + 0.41943 = 1.56757 ms, printed 1.568 ms); the line shows both ends.
    A calibration without the cost (a compiled framework) has none."""
    from dataclasses import replace

    matmul = ClassModel("matmul", Curve((-7.0, -5.0), (-6.0, -5.0)), None, points=9)
    calibration = replace(_calibration({"matmul": matmul}), first_touch_seconds_per_byte=1e-10)
    expected = expected_time(_estimate(), calibration, 1e-3, machine={})
    assert expected.first_touch_seconds == pytest.approx(419.4304e-6)
    assert expected.cold_seconds == pytest.approx(expected.seconds + 419.4304e-6)
    from neural_cost.report.expected_text import expected_line

    assert "1.148 ms (" in expected_line(
        expected
    ) and ", up to 1.568 ms if every large result lands on fresh pages" in expected_line(expected)
    assert expected_time(_estimate(), _calibration({"matmul": matmul}), machine={}).first_touch_seconds is None
    assert type(expected).from_dict(expected.to_dict()) == expected


def test_operation_and_scope_rows_get_their_share_of_the_expected_time():
    """fusion.0's expected 2.29867 µs is split over mm and add by their own bounds (as measured
    time is): mm 524.288 ns (compute) and add 491.52 ns (49,152 B at 100 GB/s) → mm gets
    524.288 / 1,015.808 of it; the unmapped record big takes the unmapped row's 125.82912 µs whole.
    Scopes (all unscoped here) sum their records'. The table gets an expected column."""
    from neural_cost import analyze_gap
    from tests.helpers import cpu_measurement

    matmul = ClassModel("matmul", Curve((-7.0, -5.0), (-6.0, -5.0)), None, points=9)
    expected = expected_time(_estimate(), _calibration({"matmul": matmul}), machine={})
    report = analyze_gap(_estimate(), cpu_measurement((200e-6,) * 5), SPEC, expected=expected)
    rows = {row.name: row for row in report.operation_rows}
    fusion = next(r.seconds for r in expected.rows if r.name == "fusion.0")
    assert rows["mm"].bound_seconds == pytest.approx(524.288e-9) and rows["add"].bound_seconds == pytest.approx(
        491.52e-9
    )
    assert rows["mm"].expected_seconds == pytest.approx(fusion * 524.288 / 1015.808)
    assert rows["add"].expected_seconds == pytest.approx(fusion * 491.52 / 1015.808)
    assert rows["big"].expected_seconds == pytest.approx(125.82912e-6)
    total = sum(row.expected_seconds or 0.0 for row in report.scope_rows)
    assert total == pytest.approx(fusion + 125.82912e-6)
    header = next(line for line in report.render().splitlines() if "FLOP/B" in line and "share" in line)
    assert "expected" in header


def test_a_recurrent_layer_is_one_rnn_kernel_and_its_modules_fills_are_not():
    """The class comes from what a kernel runs, never its module path: inside ``lstm`` (an
    nn.LSTM), ``mkldnn_rnn_layer`` is the rnn class while the zeros and stack around it are
    a fill and copies (they were once scored as whole recurrent layers, 73 µs each, for ``lstm/``
    in their name). A layer of 5 steps (sequence length 5) reads its class's curve per step."""
    torch = pytest.importorskip("torch")
    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.kernels import kernel_rows

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(8, 16, batch_first=True)

        def forward(self, x):
            return self.lstm(x)[0]

    with torch.no_grad():
        estimate = estimate_trace(adapter_for("torch").trace(Net(), (torch.randn(2, 5, 8),)))
    classes = {row.name: kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0]}
    assert classes["lstm/mkldnn_rnn_layer"] == "rnn"
    assert {name: cls for name, cls in classes.items() if cls == "rnn"} == {"lstm/mkldnn_rnn_layer": "rnn"}
    assert classes["lstm/zeros"] == "elementwise"  # a fill's record
    assert classes["lstm/stack"] == "copy"
    # its curve is read per time step: 5 steps of 1/5 of its roofline time each, times 5
    from neural_cost.analysis.kernel_classes import repeats

    rows = {row.name: row for row in kernel_rows(estimate, SPEC)[0]}
    layer = rows["lstm/mkldnn_rnn_layer"]
    assert repeats(estimate, layer, "rnn") == 5 and repeats(estimate, rows["lstm/zeros"], "elementwise") == 1
    rnn = ClassModel("rnn", Curve((-7.0, -5.0), (-6.0, -5.0)), None, points=9)
    expected = expected_time(estimate, _calibration({"rnn": rnn}), machine={})
    row = next(r for r in expected.rows if r.name == "lstm/mkldnn_rnn_layer")
    step = max(layer.compute_seconds, layer.memory_seconds) / 5  # one curve of the step's roofline time
    assert row.seconds == pytest.approx(5 * rnn.seconds(step, 0.0))
    assert row.kernel_class == "rnn:kept"  # its weights stay in a core's cache; read off the family's curve
    assert "rnn:kept (1) off rnn" in next(n for n in expected.notes if n.startswith("kernels read off another"))


@pytest.mark.parametrize(
    ("hidden", "steps", "again"),
    [
        (16, 5, 0.0),  # W_hh 16 × 64 × 4 = 4 KiB: a core keeps it (SPEC's per-core L2 holds 1 MiB)
        (256, 5, 0.0),  # 256 × 1,024 × 4 = 1 MiB: still kept
        (512, 3, 2 * 4_194_304 / 100e9),  # 4 MiB: read again at steps 2 and 3, L3 unmeasured → DRAM 100 GB/s
    ],
)
def test_a_recurrent_layers_weights_are_read_again_at_every_step_unless_a_core_keeps_them(hidden, steps, again):
    """A layer's traffic counts each region once (its footprint), as if its weights stayed in
    cache; its step's memory time adds W_hh (hidden × 4·hidden float32) read again at every step
    after the first when one step's weights do not fit a core's own cache (SPEC's per-core L2,
    1 MiB), at the level that holds them: 512 hidden units, 4 MiB, 2 × 4,194,304 B ÷ 1e11 B/s =
    83.886 µs more than the footprint's time. Its class reads one curve, of the larger of that
    and its compute time."""
    torch = pytest.importorskip("torch")
    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.kernel_classes import parts
    from neural_cost.analysis.kernels import kernel_rows

    layer = torch.nn.LSTM(8, hidden, batch_first=True)
    with torch.no_grad():
        estimate = estimate_trace(adapter_for("torch").trace(layer, (torch.randn(1, steps, 8),)))
    row = next(r for r in kernel_rows(estimate, SPEC)[0] if r.name.endswith("mkldnn_rnn_layer"))
    (part,) = parts(estimate, row, SPEC)
    # batch 1: one row a step, ``rnn:streamed:few`` (the test below)
    assert (part.kernel_class, part.repeats) == ("rnn:streamed:few" if again else "rnn:kept", steps)
    assert part.compute_seconds == pytest.approx(max(row.compute_seconds, row.memory_seconds + again))
    assert part.memory_seconds == 0.0
    if again:  # 512 units at batch 1: 2 × 2·512·2,048 FLOPs a step are far under 4 MiB at 100 GB/s
        assert part.compute_seconds == pytest.approx(row.memory_seconds + again)


def test_glibc_settings_are_read_as_glibc_reads_them():
    """Numbers as strtoul with base 0: -1 wraps to SIZE_MAX ("never trim"), 0x hex, a leading 0
    octal; a suffix is not modeled. In GLIBC_TUNABLES a later entry overrides an earlier one; a
    variable and its tunable set to different values, or huge pages for malloc, are not modeled."""
    import platform

    from neural_cost.analysis.fresh_pages import glibc_allocator

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's settings are what is read")
    never = glibc_allocator({"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "-1"})
    assert (never.mapped_from, never.trim_bytes, never.caveat) == (None, 2**64 - 1, None)
    assert never.keeps(10**15)
    assert glibc_allocator({"MALLOC_MMAP_THRESHOLD_": "0x20000"}).mapped_from == 131_072
    assert glibc_allocator({"MALLOC_MMAP_THRESHOLD_": "010"}).mapped_from == 8
    assert glibc_allocator({}).mapped_from == 32 * 1024 * 1024 and glibc_allocator({}).trim_bytes is None
    assert "'16G' is not a plain number" in (glibc_allocator({"MALLOC_TRIM_THRESHOLD_": "16G"}).caveat or "")
    later = glibc_allocator({"GLIBC_TUNABLES": "glibc.malloc.mmap_max=1:glibc.malloc.mmap_max=0"})
    assert later.mapped_from is None and later.settings == "MALLOC_MMAP_MAX_=0"
    both = glibc_allocator({"MALLOC_MMAP_MAX_": "0", "GLIBC_TUNABLES": "glibc.malloc.mmap_max=65536"})
    assert "both set" in (both.caveat or "")
    assert glibc_allocator({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"}).caveat is None
    assert "hugetlb" in (glibc_allocator({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}).caveat or "")


def _child_output(lines, **environment):
    """What a fresh Python process running ``lines`` prints, started with this environment less
    every glibc allocator setting (glibc's defaults), plus ``environment``."""
    import os
    import subprocess
    import sys

    drop = ("GLIBC_TUNABLES", "LD_PRELOAD")
    env = {name: value for name, value in os.environ.items() if not name.startswith("MALLOC_") and name not in drop}
    done = subprocess.run([sys.executable, "-c", "\n".join(lines)], env={**env, **environment},
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_allocator_is_read_from_the_environment_the_process_started_with():
    """glibc reads its settings when the process starts: one that sets ``MALLOC_TOP_PAD_`` in
    ``os.environ`` afterwards still runs (and is predicted) with glibc's defaults; one started
    with it runs with the dynamic threshold off (results of ≥ 128 KiB mapped every run)."""
    import os
    import platform

    if platform.libc_ver()[0] != "glibc" or not os.path.exists("/proc/self/environ"):
        pytest.skip("glibc on Linux is what is read")
    lines = (
        "import os",
        "os.environ['MALLOC_TOP_PAD_'] = '100000000'",
        "from neural_cost.analysis.fresh_pages import glibc_allocator",
        "print(glibc_allocator().mapped_from)",
    )
    late, started = _child_output(lines), _child_output(lines, MALLOC_TOP_PAD_="100000000")
    assert (late[-1], started[-1]) == (str(32 * 1024 * 1024), str(128 * 1024))


def _two_large_results():
    from neural_cost import Kernel, Operation

    ops = (  # logits: 4,096 × 2,048 float32 = 33,554,432 B = 32 MiB; hidden: 2,048 × 2,048 = 16,777,216 B
        Operation("logits", "elementwise", ((4096, 2048), (4096, 2048)), (4096, 2048), attrs={"op": "add"}),
        Operation("hidden", "elementwise", ((2048, 2048), (2048, 2048)), (2048, 2048), attrs={"op": "add"}),
    )
    kernels = (Kernel("logits", (0,), traffic_bytes=100_663_296), Kernel("hidden", (1,), traffic_bytes=50_331_648))
    return estimate_trace(Trace(ops, Coverage.full(ops), kernels=kernels, kernel_source="hand-written"))


def test_results_of_32_mib_are_on_fresh_pages_every_run_and_smaller_ones_only_at_the_upper_end(monkeypatch):
    """At 1e-10 s per fresh byte (no class calibrated: each kernel at its bound): logits' 32 MiB
    result is mapped anew every run by glibc (its dynamic threshold stops at 32 MiB), so its row
    and the expected time gain 33,554,432 × 1e-10 = 3.3554432 ms; hidden's 16 MiB may or may not
    be reused: only the upper end counts it, (33,554,432 + 16,777,216) × 1e-10 = 5.0331648 ms in
    all. With glibc's thresholds set in the environment its dynamic threshold is off (measured
    with results of 1-40 MiB in a loop, ``analysis/fresh_pages.py``): the cases are below."""
    from dataclasses import replace

    glibc_defaults(monkeypatch)
    calibration = replace(_calibration({}), first_touch_seconds_per_byte=1e-10)
    expected = expected_time(_two_large_results(), calibration, machine={})
    rows = {row.name: row for row in expected.rows}
    assert rows["logits"].seconds - rows["logits"].bound_seconds == pytest.approx(3.3554432e-3)
    assert rows["hidden"].seconds == pytest.approx(rows["hidden"].bound_seconds)
    assert expected.fresh_page_seconds == pytest.approx(3.3554432e-3)
    assert expected.seconds == pytest.approx(rows["logits"].bound_seconds + rows["hidden"].bound_seconds + 3.3554432e-3)
    assert expected.cold_seconds == pytest.approx(expected.seconds - 3.3554432e-3 + 5.0331648e-3)
    assert any("33.6 MB of results of ≥ 32 MiB each are mapped anew" in note for note in expected.notes)
    assert type(expected).from_dict(expected.to_dict()) == expected

    def tuned(**environment):
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        found = expected_time(_two_large_results(), calibration, machine={})
        for name in environment:
            monkeypatch.delenv(name)
        return found

    # MALLOC_TOP_PAD_ alone: the mmap threshold stays at 128 KiB, so both results are mapped anew
    # every run: 5.0331648 ms in the point, and the upper end is no higher
    padded = tuned(MALLOC_TOP_PAD_="100000000")
    assert padded.fresh_page_seconds == pytest.approx(5.0331648e-3)
    assert padded.cold_seconds == pytest.approx(padded.seconds)
    assert any("50.3 MB of results of ≥ 128 KiB each are mapped anew" in note for note in padded.notes)
    # no mmap at all and a trim threshold (16 GiB) above the 48 MiB a run frees: no fresh pages at
    # all, the upper end is the point; the same through GLIBC_TUNABLES
    for kept in (
        tuned(MALLOC_MMAP_MAX_="0", MALLOC_TRIM_THRESHOLD_="17179869184"),
        tuned(GLIBC_TUNABLES="glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184"),
    ):
        assert kept.fresh_page_seconds == 0 and kept.cold_seconds == pytest.approx(kept.seconds)
        assert rows["hidden"].bound_seconds + rows["logits"].bound_seconds == pytest.approx(kept.seconds)
        assert any(note.startswith("allocator keeps its pages") for note in kept.notes)
    # an mmap threshold of 20 MiB with the heap kept: the 32 MiB logits mapped anew (3.3554432 ms),
    # the 16 MiB hidden on kept pages
    split = tuned(MALLOC_MMAP_THRESHOLD_="20971520", MALLOC_TRIM_THRESHOLD_="17179869184")
    assert split.fresh_page_seconds == pytest.approx(3.3554432e-3) and split.cold_seconds == pytest.approx(
        split.seconds
    )
    # a trim threshold below the 16 MiB the heap frees: the hidden result may be trimmed (upper end)
    trimmed = tuned(MALLOC_MMAP_THRESHOLD_="20971520", MALLOC_TRIM_THRESHOLD_="1048576")
    assert trimmed.cold_seconds == pytest.approx(trimmed.seconds + 1.6777216e-3)
    # a threshold above 32 MiB (glibc versions differ) or one glibc cannot read: nothing predicted
    for unread, said in (
        ({"MALLOC_MMAP_THRESHOLD_": "1000000000"}, "above 32 MiB"),
        ({"MALLOC_TOP_PAD_": "lots"}, "'lots'"),
        ({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}, "hugetlb"),
    ):
        found = tuned(**unread)
        assert found.fresh_page_seconds == 0 and found.cold_seconds == pytest.approx(found.seconds + 5.0331648e-3)
        assert any(note.startswith("fresh pages not predicted") and said in note for note in found.notes)


def test_measured_page_faults_are_priced_beside_the_expectation(monkeypatch):
    """1,000 minor page faults per timed run of 4,096-byte pages; at 1e-10 s per byte a page costs
    409.6 ns and the faults 409.6 µs, beside the 3.3554432 ms the expected time counts (the 32 MiB
    result's faults: counted, not measured, so the two are set side by side, never merged).
    A measurement without fault counts, or a framework without a first-touch cost, prints nothing."""
    from dataclasses import replace

    from neural_cost.report.expected_text import page_fault_line

    glibc_defaults(monkeypatch)
    calibration = replace(_calibration({}), first_touch_seconds_per_byte=1e-10)
    expected = expected_time(_two_large_results(), calibration, machine={})
    line = page_fault_line(expected, {"minor_page_faults_per_run": 1000.0, "page_bytes": 4096})
    assert line == (
        "page faults: 1,000 per timed run measured (≈ 409.6 µs at the calibrated 409.6 ns per 4.10 kB page; a "
        "transparent huge page faults once for 2 MiB and costs more); the expected time counts 3.355 ms of "
        "fresh-page time"
    )
    assert page_fault_line(expected, {}) is None
    compiled = expected_time(_two_large_results(), _calibration({}), machine={})
    assert page_fault_line(compiled, {"minor_page_faults_per_run": 1000.0, "page_bytes": 4096}) is None


def test_page_faults_beyond_the_expectation_name_the_allocator_and_the_fix(monkeypatch):
    """10,000 faults of 4,096 B per run at 1e-10 s per byte cost 4.096 ms, of which the expected
    time counts 3.3554432 ms (the 32 MiB result): 0.7405568 ms beyond it. Against a 5 ms run that
    is 14.8% (≥ 10%: named, with the settings that keep the pages); against 10 ms, 7.4% (not)."""
    from dataclasses import replace

    from neural_cost import analyze_gap
    from neural_cost.analysis.fresh_pages import KEEP_PAGES
    from tests.helpers import cpu_measurement

    glibc_defaults(monkeypatch)
    calibration = replace(_calibration({}), first_touch_seconds_per_byte=1e-10)
    estimate = _two_large_results()
    expected = expected_time(estimate, calibration, machine={})
    faults = {"minor_page_faults_per_run": 10_000.0, "page_bytes": 4096}

    def finding(observed):
        measurement = replace(cpu_measurement((observed,) * 5), allocator=faults)
        report = analyze_gap(estimate, measurement, SPEC, expected=expected)
        return next((f.message for f in report.findings if f.code == "page_faults"), None)

    message = finding(5e-3)
    assert message is not None and message.startswith("page faults cost ≈ 740.6 µs per run beyond what the expected")
    assert "(14.8% of the observed time; 10,000 measured" in message and f"Keep it with {KEEP_PAGES}" in message
    assert finding(10e-3) is None


def test_a_compiled_programs_page_faults_are_priced_never_predicted(monkeypatch):
    """A compiled program's calibration (JAX, TensorFlow: ``fresh_results`` False) has the machine's
    first-touch cost but predicts no faults: XLA's buffers are not its records' results. The
    same two large results (32 MiB and 16 MiB) add nothing to the expected time, give no upper
    end and no allocator note; measured faults are priced all the same: 10,000 of 4,096 B at
    1e-10 s a byte = 4.096 ms, all beyond the expectation, 81.9% of a 5 ms run (named)."""
    from dataclasses import replace

    from neural_cost import analyze_gap
    from neural_cost.report.expected_text import page_fault_line
    from tests.helpers import cpu_measurement

    glibc_defaults(monkeypatch)
    estimate = _two_large_results()
    plain = expected_time(estimate, _calibration({}), machine={})
    calibration = replace(_calibration({}), first_touch_seconds_per_byte=1e-10, fresh_results=False)
    expected = expected_time(estimate, calibration, machine={})
    assert expected.seconds == plain.seconds and expected.fresh_page_seconds == 0
    assert expected.first_touch_seconds is None and expected.notes == plain.notes
    assert expected.first_touch_seconds_per_byte == 1e-10
    faults = {"minor_page_faults_per_run": 10_000.0, "page_bytes": 4096}
    line = page_fault_line(expected, faults)
    assert line is not None and line.startswith("page faults: 10,000 per timed run measured (≈ 4.096 ms at")
    assert line.endswith("a compiled program's faults are measured, never predicted: the expected time counts none")
    measurement = replace(cpu_measurement((5e-3,) * 5), allocator=faults)
    report = analyze_gap(estimate, measurement, SPEC, expected=expected)
    message = next(f.message for f in report.findings if f.code == "page_faults")
    assert message.startswith("page faults cost ≈ 4.096 ms per run beyond what the expected time counts (81.9%")


def test_a_benchmark_counts_the_page_faults_of_its_timed_runs():
    """Each timed run writes a fresh 40 MiB torch tensor (10,240 pages of 4 KiB; above the 32 MiB
    from which glibc maps every block anew; torch asks for no huge pages, unlike numpy): at least
    most of those pages fault per run. The count is the whole process's, per run, beside the page
    size. Measured in a fresh process under glibc's defaults: in the full suite's process the same
    benchmark counted 3,313 faults a run (an allocator state earlier tests left)."""
    import platform
    import resource
    from pathlib import Path

    pytest.importorskip("torch")
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's default behaviour is what is relied on")
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if thp.exists() and "[always]" in thp.read_text():
        pytest.skip("transparent huge pages always on: a 40 MiB block faults about 20 times, not 10,240")
    faults, page = _child_output((
        "import torch",
        "from neural_cost.measure.timing import benchmark",
        "m = benchmark(lambda: torch.ones(40 * 1024 * 1024 // 4), warmup=1, repeats=5, sync=None)",
        "print(m.allocator['minor_page_faults_per_run'], m.allocator['page_bytes'])",
    ))[-2:]  # fmt: skip
    pages = 40 * 1024 * 1024 // resource.getpagesize()
    assert int(page) == resource.getpagesize()
    assert float(faults) >= 0.5 * pages


def test_a_result_written_in_place_lands_on_no_fresh_pages(monkeypatch):
    """``y = x * 2`` then ``relu_(y)`` on a 4,096 × 4,096 float32 tensor (67,108,864 B): the mul
    allocates a 64 MiB result (mapped anew every run: 67,108,864 × 1e-10 = 6.7108864 ms), the
    in-place relu writes into it (nothing fresh). The upper end counts the mul's result only."""
    from dataclasses import replace

    torch = pytest.importorskip("torch")
    from neural_cost.adapters import adapter_for

    glibc_defaults(monkeypatch)

    def program(x):
        y = x * 2.0
        return torch.relu_(y)

    with torch.no_grad():
        estimate = estimate_trace(adapter_for("torch").trace(program, (torch.randn(4096, 4096),)))
    calibration = replace(_calibration({}), first_touch_seconds_per_byte=1e-10)
    expected = expected_time(estimate, calibration, machine={})
    assert expected.fresh_page_seconds == pytest.approx(6.7108864e-3)
    assert expected.first_touch_seconds == pytest.approx(6.7108864e-3)


@pytest.mark.parametrize(("batch", "member"), [(1, "rnn:streamed:few"), (2, "rnn:streamed:few"), (4, "rnn:streamed")])
def test_a_streamed_layer_of_one_or_two_rows_a_step_is_its_own_member(batch, member):
    """LSTM(8, 512): W_hh 4 MiB a step, over SPEC's 1 MiB per-core L2: streamed. Its steps multiply ``batch`` rows
    (its ``hidden_matmul`` records' (batch, 512) inputs): at 1 or 2 (``FEW_STEP_ROWS``) a weight feeds one or two
    multiply-adds, ``rnn:streamed:few``; at 4 ``rnn:streamed``. Without a curve of its own the few-row member reads
    ``rnn:streamed``'s, noted: the same seconds as a calibration whose ``rnn:streamed`` curve is all there is."""
    torch = pytest.importorskip("torch")
    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.kernel_classes import parts
    from neural_cost.analysis.kernels import kernel_rows
    from neural_cost.analysis.rnn_views import FEW_STEP_ROWS

    layer = torch.nn.LSTM(8, 512, batch_first=True)
    with torch.no_grad():
        estimate = estimate_trace(adapter_for("torch").trace(layer, (torch.randn(batch, 3, 8),)))
    row = next(r for r in kernel_rows(estimate, SPEC)[0] if r.name.endswith("mkldnn_rnn_layer"))
    (part,) = parts(estimate, row, SPEC)
    assert FEW_STEP_ROWS == 2 and part.kernel_class == member
    streamed = ClassModel("rnn:streamed", Curve((-7.0, -4.0), (-6.0, -4.0)), None, points=9)
    expected = expected_time(estimate, _calibration({"rnn:streamed": streamed}), machine={})
    found = next(r for r in expected.rows if r.name == row.name)
    assert found.kernel_class == member and found.seconds == pytest.approx(
        3 * streamed.seconds(part.compute_seconds / 3, 0.0)
    )
    borrowed = [n for n in expected.notes if n.startswith("kernels read off another")]
    assert borrowed == (["kernels read off another class's curve (the calibration has none of theirs): "
                         "rnn:streamed:few (1) off rnn:streamed"] if member.endswith("few") else [])  # fmt: skip


def test_a_packed_sequences_steps_are_counted_together_for_its_streamed_weights():
    """Sequences of lengths 3 and 2 packed (cuDNN's layer; PyTorch's CPU runs a packed LSTM as
    per-step ops): batch sizes 2, 2, 1 — two per-step matmul records (batch 2 × 2 steps, batch 1 ×
    1 step), 3 steps in all. W_hh of 512 hidden units is 512 × 2,048 × 4 = 4 MiB (over SPEC's 1 MiB
    L2): read again at 2 steps, 2 × 4,194,304 B ÷ 100 GB/s = 83.886 µs (one record's count alone
    would give 1 step)."""
    from neural_cost import Coverage, Kernel, Operation, Trace
    from neural_cost.analysis.kernel_classes import parts
    from neural_cost.analysis.kernels import kernel_rows

    ops = (
        Operation("l0.input_matmul", "matmul", ((5, 8), (8, 2048)), (5, 2048), "float32"),
        Operation("l0.hidden_matmul", "matmul", ((2, 512), (512, 2048)), (2, 2048), "float32", count=2),
        Operation("l0.hidden_matmul", "matmul", ((1, 512), (512, 2048)), (1, 2048), "float32", count=1),
    )
    layer = Kernel("lstm/_cudnn_rnn", (0, 1, 2), traffic_bytes=4_300_000, footprint_bytes=4_300_000,
                   kind="aten._cudnn_rnn.default")  # fmt: skip
    estimate = estimate_trace(Trace(ops, Coverage.full(ops), kernels=(layer,), kernel_source="hand-written"))
    (row,) = kernel_rows(estimate, SPEC)[0]
    (part,) = parts(estimate, row, SPEC)
    assert part.kernel_class == "rnn:streamed:few"  # its steps multiply 2 rows at most
    assert part.compute_seconds == pytest.approx(max(row.compute_seconds, row.memory_seconds + 2 * 4_194_304 / 100e9))
    assert part.repeats == 3  # its curve is read per step: 2 + 1 steps (the largest count alone read 2)


def test_below_its_first_knots_a_two_curve_class_falls_to_its_quickest_point():
    """JAX's depthwise class: its first knots are medians of its smallest points (compute 100 µs of
    roofline → 10 ms, memory 10 µs → 2.4 ms), its quickest point took 500 µs. A layer of 2 µs
    compute and 3 µs memory roofline time reads, in proportion to its work, compute
    10 ms × 2/100 = 200 µs (held at the floor, 500 µs) and memory 2.4 ms × 3/10 = 720 µs: 720 µs,
    not the knot's 2.4 ms; a layer of 1 µs each side reads 240 µs on the memory side, below the
    quickest point: 500 µs. A one-curve class reads its curve on both sides, in proportion too.
    A family's quickest point is its members' (``fit_calibration`` fits it on theirs); a point of
    no time, which no curve fits, is no floor."""
    depthwise = ClassModel(
        "depthwise_conv", Curve((-4.0,), (-2.0,)), Curve((-5.0, -4.0), (math.log10(2.4e-3), -1.5)), 10
    )
    points = (
        Point("depthwise_conv", 1e-6, 2e-6, 5e-4),
        Point("depthwise_conv", 2e-5, 1e-5, 3e-3),
        Point("elementwise", 0.0, 1e-7, 1e-6),  # another class's quicker kernel is not this class's floor
    )
    calibration = replace(_calibration({"depthwise_conv": depthwise}), points=points)
    assert calibration.floors() == {"depthwise_conv": 5e-4, "elementwise": 1e-6}
    floor = calibration.floors()["depthwise_conv"]
    assert depthwise.seconds(2e-6, 3e-6, floor) == pytest.approx(720e-6)
    assert depthwise.seconds(1e-6, 1e-6, floor) == pytest.approx(500e-6)
    assert depthwise.seconds(2e-6, 3e-6) == pytest.approx(2.4e-3)  # no points: its first time, as before
    assert depthwise.seconds(2e-6, 3e-6, 1.0) == pytest.approx(2.4e-3)  # a floor above its first time: unused
    # one curve (a memory-only class, read on both sides) falls the same way: 2.4 ms × 4/10 = 960 µs
    strided = ClassModel("depthwise_conv:strided", None, Curve((-5.0,), (math.log10(2.4e-3),)), 3)
    assert strided.seconds(1e-6, 4e-6, floor) == pytest.approx(960e-6)
    assert strided.seconds(1e-6, 1e-6, floor) == pytest.approx(500e-6)
    assert strided.seconds(1e-6, 4e-6) == pytest.approx(2.4e-3)  # no points: flat below its knot, as before
    members = (Point("depthwise_conv:strided", 1e-6, 2e-6, 3e-4), Point("depthwise_conv:stride1", 1e-6, 2e-6, 0.0))
    assert replace(calibration, points=members).floors() == {"depthwise_conv:strided": 3e-4, "depthwise_conv": 3e-4}
    assert strided.memory is not None  # a floor above the knot's time is not read: no step down at the knot
    assert strided.memory.scaled(1e-9, 1.0) == pytest.approx(2.4e-3)


def test_expected_time_reads_a_two_curve_class_down_to_its_quickest_point():
    """fusion.0 (compute 528.384 ns, memory 98.304 ns: the module docstring) in a matmul class
    whose first knots are compute 10 µs → 1 ms and memory 1 µs → 100 µs and whose quickest point
    took 20 µs: in proportion, compute 1 ms × 528.384/10,000 = 52.8384 µs and memory
    100 µs × 98.304/1,000 = 9.8304 µs (held at the floor, 20 µs) → 52.8384 µs (the class's first
    time, 100 µs, without points)."""
    matmul = ClassModel("matmul", Curve((-5.0,), (-3.0,)), Curve((-6.0,), (-4.0,)), points=9)
    points = (Point("matmul", 1e-7, 1e-7, 2e-5),)
    expected = expected_time(_estimate(), replace(_calibration({"matmul": matmul}), points=points), machine={})
    assert next(row for row in expected.rows if row.name == "fusion.0").seconds == pytest.approx(52.8384e-6)
    alone = expected_time(_estimate(), _calibration({"matmul": matmul}), machine={})
    assert next(row for row in alone.rows if row.name == "fusion.0").seconds == pytest.approx(100e-6)


def test_a_memory_bound_loop_kernel_without_a_loop_curve_reads_the_loop_pointwise_curve():
    """copy.3 runs 5 times per run (a loop body's copy): ``copy@loop``. A standalone copy's curve is
    of programs that each pay a launch (here flat at 4 µs: a JAX standalone gather's quickest was
    3.9 µs), which a loop body's kernel does not; it reads ``elementwise@loop`` (flat 0.1 µs) when
    the calibration has that: 5 × 0.1 µs = 0.5 µs, not 5 × 4 µs = 20 µs, said as borrowed; without
    it, the standalone ``elementwise`` (flat 1.5 µs: 7.5 µs); with neither, copy's own. A
    compute-bound loop kernel (matmul@loop) reads matmul's."""
    from neural_cost import Kernel
    from neural_cost.analysis.kernel_classes import borrowed_class, read_class

    kernels = (Kernel("copy.3", (), traffic_bytes=4_000, footprint_bytes=4_000, executions=5, kind="copy"),)
    estimate = estimate_trace(Trace(OPS, Coverage.full(OPS), kernels=kernels, kernel_source="hand", framework="jax"))
    copy = ClassModel("copy", Curve((-5.0,), (math.log10(4e-6),)), None, points=3)
    loop = ClassModel("elementwise@loop", Curve((-5.0,), (-7.0,)), None, points=3)
    matmul = ClassModel("matmul", Curve((-5.0,), (-6.0,)), None, points=3)
    both = _calibration({"copy": copy, "elementwise@loop": loop, "matmul": matmul})
    expected = expected_time(estimate, both, machine={})
    row = next(r for r in expected.rows if r.name == "copy.3")
    assert row.kernel_class == "copy@loop"
    assert row.seconds == pytest.approx(5 * 1e-7)
    assert "copy@loop (1) off elementwise@loop" in " ".join(expected.notes)
    standalone = expected_time(estimate, _calibration({"copy": copy}), machine={})
    assert next(r for r in standalone.rows if r.name == "copy.3").seconds == pytest.approx(5 * 4e-6)
    assert read_class(both, "gather@loop") == read_class(both, "reduce@loop") == "elementwise@loop"
    assert borrowed_class(both, "norm@loop") == "elementwise@loop"
    assert read_class(both, "matmul@loop") == "matmul"  # compute-bound: its class's curve
    assert read_class(both, "copy") == "copy"  # a standalone kernel reads its own
    # no loop curve (TensorFlow's grids have no loops): the standalone pointwise curve, flat 1.5 µs
    pointwise = ClassModel("elementwise", Curve((-5.0,), (math.log10(1.5e-6),)), None, points=3)
    graph = _calibration({"copy": copy, "elementwise": pointwise})
    row = next(r for r in expected_time(estimate, graph, machine={}).rows if r.name == "copy.3")
    assert row.seconds == pytest.approx(5 * 1.5e-6)
    xla = _calibration({"copy@xla": copy, "elementwise@xla": pointwise, "elementwise": loop})
    assert read_class(xla, "copy@xla@loop") == "elementwise@xla"  # an XLA kernel: its XLA kind's


def test_a_kernel_past_its_classs_largest_point_is_named_as_extrapolated():
    """fusion.0 (matmul) has 528.384 ns of compute roofline (the module docstring). Its class's
    points reach 100 ns (compute 100 ns, memory 10 ns; a conv point of 1 ms is another class's): it
    is 5.28384× past them, over PAST (2×), and its 2.29867 µs are 2.29867 / 148.13779 = 1.6% of the
    kernels' expected time (the module docstring's sum). With a point at 300 ns it is 1.76× past:
    no note; a calibration without points names nothing."""
    matmul = ClassModel("matmul", Curve((-7.0, -5.0), (-6.0, -5.0)), None, points=9)
    points = (Point("matmul", 1e-7, 1e-8, 1e-6, "mm"), Point("conv", 1e-3, 1e-4, 2e-3, "conv"))
    calibration = replace(_calibration({"matmul": matmul}), points=points)
    expected = expected_time(_estimate(), calibration, floor_seconds=1e-3, machine={})
    note = next(note for note in expected.notes if "calibration point" in note)
    assert note.startswith("extrapolated: 1 kernel (1.6% of the kernels' expected time) more than 2× past the ")
    assert "(fusion.0 (matmul) 5.3×)" in note
    nearer = replace(calibration, points=(Point("matmul", 3e-7, 1e-8, 2e-6, "mm"),))
    for quiet in (nearer, _calibration({"matmul": matmul})):
        assert not any("calibration point" in note for note in expected_time(_estimate(), quiet, 1e-3).notes)


def test_a_kernel_expected_under_its_bound_is_named_with_the_specs_sources():
    """A curve 0.2 decades under the line through (-7, -7), (-5, -5): knots (-7, -7.2), (-5, -5.2), for fusion.0's
    class (a 64-row PyTorch product: ``thin_matmul``). Its compute roofline 528.384 ns (its bound; log10 =
    -6.27706) reads -7.2 + 0.72294 = -6.47706 → 333.39 ns (a line of slope 1: 528.384 × 10^-0.2), 0.63× its
    bound. The kernels: 0.33339 + 20 + 0.01 + 125.82912 = 146.1725 µs, of which fusion.0 is 0.23%. Kernels scored
    at their bound (no curve) are never named, nor one read off another class's curve (the same curve as
    ``matmul`` only: fusion.0 borrows it); the module docstring's curve reads fusion.0 at 2.29867 µs, over its
    bound: no note. With a copy curve 0.3 decades under the line too (knots (-5, -5.3), (-4, -4.3)), copy.1's
    20 µs of DRAM traffic (2 MB at 100 GB/s; its 2 MB fit the L3, which has no bandwidth) reads 20 × 10^-0.3 =
    10.024 µs, 0.50×: the kernels 0.33339 + 10.02374 + 0.01 + 125.82912 = 136.19625 µs, the two 7.6% of them.
    A float32 peak the spec says was measured drops the clock's advice."""
    fast = ClassModel("thin_matmul", Curve((-7.0, -5.0), (-7.2, -5.2)), None, points=9)
    expected = expected_time(_estimate(), _calibration({"thin_matmul": fast}), machine={})
    row = next(row for row in expected.rows if row.name == "fusion.0")
    assert row.seconds == pytest.approx(528.384e-9 * 10**-0.2) and row.bound_seconds == pytest.approx(528.384e-9)
    note = next(note for note in expected.notes if note.startswith("under the bound"))
    assert note == (
        "under the bound: 1 kernel (0.2% of the kernels' expected time) expected faster than its roofline bound "
        "(fusion.0 (thin_matmul) 0.63×; expected ÷ bound): the calibration measured this device beating the spec "
        "there — 1 compute-bound, scored at peaks from float32: 'user-supplied' (a formula's clock can sit below "
        "the one the device runs at: doubt the bound there, not the expected time; `neural-cost hardware "
        "--calibrate` measures the peaks)"
    )
    copy = ClassModel("copy", Curve((-5.0, -4.0), (-5.3, -4.3)), None, points=9)
    both = expected_time(_estimate(), _calibration({"thin_matmul": fast, "copy": copy}), machine={})
    assert next(row.seconds for row in both.rows if row.name == "copy.1") == pytest.approx(20e-6 * 10**-0.3)
    note = next(note for note in both.notes if note.startswith("under the bound"))
    assert note.startswith("under the bound: 2 kernels (7.6% of the kernels' expected time) expected faster than ")
    assert "(copy.1 (copy) 0.50×, fusion.0 (thin_matmul) 0.63×; expected ÷ bound)" in note
    assert note.endswith(
        "; 1 memory-bound, scored at DRAM bandwidth ('user-supplied') (a nearer cache holding their data, or a copy "
        "probe slower than such kernels)"
    )
    borrowed = {"matmul": replace(fast, name="matmul")}
    assert not any(n.startswith("under the bound") for n in expected_time(_estimate(), _calibration(borrowed)).notes)
    measured = replace(SPEC, sources={"peak_flops[float32]": "measured: 2048² matmul", "memory_bandwidth": "a table"})
    calibration = replace(_calibration({"thin_matmul": fast}), hardware=measured)
    note = next(n for n in expected_time(_estimate(), calibration).notes if n.startswith("under the bound"))
    assert note.endswith("1 compute-bound, scored at peaks from float32: 'measured: 2048² matmul'")
    matmul = ClassModel("thin_matmul", Curve((-7.0, -5.0), (-6.0, -5.0)), None, points=9)
    assert not any(
        n.startswith("under the bound") for n in expected_time(_estimate(), _calibration({"thin_matmul": matmul})).notes
    )
    # its class's points reaching 100 ns of roofline, fusion.0 is 5.3× past them: extrapolated, not under the bound
    points = (Point("thin_matmul", 1e-7, 1e-8, 1e-7 * 10**-0.2, "mm"),)
    notes = expected_time(_estimate(), replace(_calibration({"thin_matmul": fast}), points=points)).notes
    assert any(n.startswith("extrapolated: 1 kernel") for n in notes)
    assert not any(n.startswith("under the bound") for n in notes)


def test_the_under_bound_note_names_the_peaks_of_its_kernels_dtypes_each_source_once():
    """The note's compute side names the peaks of the dtypes the kernels under their bound compute in, not every
    dtype of the program: with the unmapped record "big" in int64 (no kernel of the note runs it) the note reads as
    in the test above, float32 only. With fusion.0's add in bfloat16 (64 × 64 = 4,096 FLOPs of its 528,384; the
    mm's 524,288 stay float32, its bound unchanged: the test spec has one peak for every dtype), both dtypes' peaks
    come from the one source, named once: ``bfloat16, float32: 'user-supplied'``."""
    fast = ClassModel("thin_matmul", Curve((-7.0, -5.0), (-7.2, -5.2)), None, points=9)

    def note(ops):
        trace = Trace(ops, Coverage.full(ops), kernels=KERNELS, kernel_source="hand-written", framework="torch")
        notes = expected_time(estimate_trace(trace), _calibration({"thin_matmul": fast}), machine={}).notes
        return next(n for n in notes if n.startswith("under the bound"))

    int64 = (*OPS[:2], replace(OPS[2], dtype="int64"))
    assert "scored at peaks from float32: 'user-supplied' (a formula's clock" in note(int64)
    assert "int64" not in note(int64)
    bfloat16 = (OPS[0], replace(OPS[1], dtype="bfloat16"), OPS[2])
    assert "scored at peaks from bfloat16, float32: 'user-supplied' (a formula's clock" in note(bfloat16)


def test_a_frameworks_own_kernel_model_revision_follows_the_shared_one():
    """A framework's own change raises its own part after the shared revision (PyTorch's were 42.1–42.6, 43.1–43.3,
    TensorFlow's 43.1); the shared 45 (thin convolutions on maps of at most 4 × 4 ``conv:small_map``, in every
    framework's grid) makes every framework's calibration again and takes them in: each is 45, and TensorFlow's
    45.1 (Keras norm layers timed as models of one layer: ``norm:batch:keras``, ``norm:layer``) and 45.2 (its graph's
    thin 1×1 convolutions ``:1x1``), JAX's 45.1 (its dots with batch dimensions ``batched_matmul``), 45.2 (its
    chained thin convolutions ``conv:chained``), 45.3 (its strided 3-channel stems ``conv:shallow``) and 45.4 (its
    filter gradients ``conv_backward:grad_weight``, a max pool's backward ``pool_backward``), 45.5 (its pointwise
    fusions read across their layout ``elementwise:transposed``) and 45.6 (a top-level softmax's or gelu's record
    mapped to its kernel), PyTorch's 45.1 (its streamed recurrent layers of one or two rows a step
    ``rnn:streamed:few``), 45.2 (its wall-timed points less their harness's time) and 45.3 (its products of fewer
    than 32 rows ``thin_matmul:few``), JAX's 45.7 and TensorFlow's 45.3 (long profiled programs timed without an
    unwatched wall); a framework without a part of its own is the shared revision alone."""
    from neural_cost.analysis import kernel_revision
    from neural_cost.analysis.expected import installed_versions

    assert kernel_revision.revision("torch") == "45.3"
    assert kernel_revision.revision("jax") == "45.7"
    assert kernel_revision.revision("tensorflow") == "45.3"
    assert installed_versions("torch")["neural-cost kernel model"] == "45.3"
    assert installed_versions("jax")["neural-cost kernel model"] == "45.7"
    own = kernel_revision.REVISIONS.pop("torch")
    try:
        assert installed_versions("torch")["neural-cost kernel model"] == "45"
    finally:
        kernel_revision.REVISIONS["torch"] = own


def test_a_pointwise_kernel_reads_its_curve_on_the_axis_its_calibration_chose():
    """An add of 65,536 float32 pairs (786,432 B moved, fits the 1 MiB L2 at 500 GB/s): its bound is
    786,432 / 500e9 = 1.572864 µs. On an ``elementwise`` curve whose calibration chose main memory's axis
    (``ClassModel.memory_axis`` "main") it reads at main memory's 100 GB/s, 7.86432 µs, where the curve's one
    segment, log10 time = log10 roofline + 0.5, gives 10^0.5 × 7.86432 µs = 24.869 µs; on one that kept the
    level's axis, 10^0.5 × 1.572864 µs = 4.974 µs. ``copy`` (never on main memory's axis) reads its L2 roofline.
    PyTorch's tanh past L2 read 2.1× its time on the level axis (``kernel_model.main_memory_candidate``)."""
    from neural_cost import Kernel, Operation
    from neural_cost.analysis.kernel_classes import Part

    ops = (
        Operation("act", "elementwise", ((256, 256), (256, 256)), (256, 256), attrs={"op": "add"}),
        Operation("moved", "copy", ((256, 256),), (256, 256)),
    )
    kernels = (Kernel("act", (0,), traffic_bytes=786_432, footprint_bytes=786_432),
               Kernel("moved", (1,), traffic_bytes=786_432, footprint_bytes=786_432))  # fmt: skip
    estimate = estimate_trace(Trace(ops, Coverage.full(ops), kernels=kernels, kernel_source="hand-written"))
    curve = Curve((-7.0, -4.0), (-6.5, -3.5))  # log10 time = log10 roofline + 0.5
    for axis, act in (("main", 10**0.5 * 7.86432e-6), ("level", 10**0.5 * 1.572864e-6)):
        classes = {"elementwise": ClassModel("elementwise", None, curve, points=9, memory_axis=axis),
                   "copy": ClassModel("copy", None, curve, points=9)}  # fmt: skip
        rows = {row.name: row for row in expected_time(estimate, _calibration(classes), machine={}).rows}
        assert rows["act"].kernel_class == "elementwise" and rows["moved"].kernel_class == "copy"
        assert rows["act"].bound_seconds == pytest.approx(1.572864e-6)
        assert rows["act"].seconds == pytest.approx(act)
        assert rows["moved"].seconds == pytest.approx(10**0.5 * 1.572864e-6)
    part = Part("transcendental:tanh", 1e-6, 10e-6, 1, 35e-6)
    on_main = ClassModel("transcendental", None, curve, points=9, memory_axis="main")
    assert part.memory_on(on_main) == 35e-6 and part.memory_on(ClassModel("copy", None, curve, points=9)) == 10e-6
    assert Part("copy", 1e-6, 10e-6, 1).memory_on(on_main) == 10e-6  # no main-memory time: its own
    point = Part("transcendental:tanh", 2e-6, 10e-6, 2, 36e-6).point(8e-6, "tanh 1000")  # per read: ÷ 2
    assert (point.compute_seconds, point.memory_seconds, point.main_memory_seconds) == (1e-6, 5e-6, 18e-6)
    assert Part("copy", 2e-6, 10e-6, 2, 36e-6).point(8e-6, "copy").main_memory_seconds is None


def test_a_pointwise_class_keeps_the_memory_axis_that_predicts_its_own_held_out_points_better():
    """Twelve ``elementwise`` points, sizes 2× apart from 1 µs of main-memory time (1, 2, 4 ... 2048 µs); the
    first six fit the L2 (5× main memory's bandwidth: their level time is a fifth). ``ran_at_main``: each ran
    3× its main-memory time, a line on main memory's axis, so every held-out point is predicted exactly there
    (error 0); on the level axis the 5× step between the sixth and seventh point bends the curve, and some
    held-out point is missed: "main". ``ran_at_level``: each ran 3× its level time, a line on the level axis
    (error 0) and a 5× step on main memory's: "level". ``copy`` is never a candidate, so its identical points
    stay on "level"; and a saved calibration keeps both the axis and the points' main-memory times."""

    mains = [2.0**i * 1e-6 for i in range(12)]
    levels = [m / 5 if i < 6 else m for i, m in enumerate(mains)]

    def points(kind: str, by_main: bool) -> list[Point]:
        return [Point(kind, 0.0, lv, 3 * (m if by_main else lv), f"{kind} {i}", main_memory_seconds=m)
                for i, (m, lv) in enumerate(zip(mains, levels, strict=True))]  # fmt: skip

    ran_at_main = fit_calibration("torch", SPEC, [*points("elementwise", True), *points("copy", True)])
    assert ran_at_main.classes["elementwise"].memory_axis == "main"
    assert ran_at_main.classes["elementwise"].median_error == pytest.approx(0.0, abs=1e-12)
    assert ran_at_main.classes["copy"].memory_axis == "level"
    assert (ran_at_main.classes["copy"].p90_error or 0) > 0.05  # the level axis misses some held-out point
    ran_at_level = fit_calibration("torch", SPEC, points("elementwise", False))
    assert ran_at_level.classes["elementwise"].memory_axis == "level"
    assert ran_at_level.classes["elementwise"].median_error == pytest.approx(0.0, abs=1e-12)
    from neural_cost.report.expected_text import calibration_lines

    shown, kept = calibration_lines(ran_at_main), calibration_lines(ran_at_level)
    assert next(line for line in shown if line.startswith("elementwise ")).endswith("  memory*")
    assert next(line for line in shown if line.startswith("copy ")).endswith("  memory")
    assert any(line.startswith("memory*: read at main memory's bandwidth") for line in shown)
    assert not any("memory*" in line for line in kept)
    loaded = KernelCalibration.from_dict(json.loads(json.dumps(ran_at_main.to_dict())))
    assert loaded.classes == ran_at_main.classes and loaded.points == ran_at_main.points
    with pytest.raises(HardwareError, match="memory axis 'dram'"):
        ClassModel("elementwise", None, Curve((-7.0,), (-6.0,)), points=9, memory_axis="dram")


def test_a_classs_largest_point_is_measured_on_its_memory_axis():
    """``extrapolated.ceilings`` (how far past its class's largest point a kernel lies) and the floors read each
    point on its class's axis. Two ``elementwise`` points: (level 1 µs, main 5 µs, ran 9 µs) and (level 3 µs,
    main 3 µs, ran 20 µs). On main memory's axis the largest is 5 µs (the L2 point); on the level's 3 µs. The
    quickest point is 9 µs on either axis (a floor is a measured time). ``copy``, with the same points, stays
    on its level axis: 3 µs."""
    from neural_cost.analysis.extrapolated import ceilings

    curve = Curve((-7.0, -4.0), (-6.5, -3.5))
    pts = tuple(Point(kind, 0.0, lv, ran, kind, main_memory_seconds=main) for kind in ("elementwise", "copy")
                for lv, main, ran in ((1e-6, 5e-6, 9e-6), (3e-6, 3e-6, 20e-6)))  # fmt: skip
    for axis, largest in (("main", 5e-6), ("level", 3e-6)):
        classes = {"elementwise": ClassModel("elementwise", None, curve, points=2, memory_axis=axis),
                   "copy": ClassModel("copy", None, curve, points=2)}  # fmt: skip
        calibration = replace(_calibration(classes), points=pts)
        assert ceilings(calibration) == {"elementwise": largest, "copy": 3e-6}
        assert calibration.floors() == {"elementwise": 9e-6, "copy": 9e-6}


def test_main_memorys_axis_needs_a_lower_median_and_no_higher_p90(monkeypatch):
    """The rule alone (``kernel_model._axis``), on scripted cross-validated errors of ten held-out points, the
    90th percentile being the ninth smallest (``_isotonic.percentile``): the level's axis errs 0.3 on nine and 0.8
    on one (median 0.3, p90 0.3). Main memory's 0.2 on nine and 0.8 on one (median 0.2, p90 0.2) is taken, and 0.2
    on nine and 1.5 on one (p90 still 0.2: one outlier of ten is past it); 0.2 on eight and 1.5 on two (p90 1.5,
    over 0.3) is not, nor errors equal to the level's (the median not lower)."""
    from neural_cost.hardware import kernel_model

    scripted = {"level": [0.3] * 9 + [0.8]}

    def cross_validate(points, axes=None):
        return {"elementwise": scripted[(axes or {}).get("elementwise", "level")]}

    monkeypatch.setattr(kernel_model, "cross_validate", cross_validate)
    points = [Point("elementwise", 0.0, 1e-6, 2e-6, "add", main_memory_seconds=3e-6)]
    for main, axis in (([0.2] * 9 + [0.8], "main"), ([0.2] * 9 + [1.5], "main"), ([0.2] * 8 + [1.5] * 2, "level"),
                       ([0.3] * 9 + [0.8], "level")):  # fmt: skip
        scripted["main"] = main
        assert kernel_model._axis("elementwise", points) == axis, main
    assert kernel_model._axis("copy", [replace(points[0], kernel_class="copy")]) == "level"  # never a candidate


def test_a_pointwise_memory_curve_has_a_knot_a_decade():
    """Four points a decade apart, (1e-6, 4e-6), (1e-5, 2e-5), (1e-4, 1e-4), (1e-3, 4e-4) s: by count, 4 // 3 =
    1 knot, two over their 3 decades (``SPLIT_SPAN``), each the median of two points — x 10^-5.5 and 10^-3.5;
    a knot a decade makes ceil(3) = 3: the first two points alone, the last two's median (10^-3.5, 2e-4)."""
    from neural_cost.hardware.kernel_curve import fit_curve

    pairs = [(1e-6, 4e-6), (1e-5, 2e-5), (1e-4, 1e-4), (1e-3, 4e-4)]
    coarse, fine = fit_curve(pairs), fit_curve(pairs, per_decade=True)
    assert coarse is not None and fine is not None
    assert coarse.xs == pytest.approx((-5.5, -3.5))
    assert fine.xs == pytest.approx((-6.0, -5.0, -3.5))
    assert [10**y for y in fine.ys] == pytest.approx([4e-6, 2e-5, 2e-4])
