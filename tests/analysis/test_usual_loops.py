"""A loop's kernels as the machine usually ran them while calibrated, beside their fastest.

A calibration keeps each kernel's smallest time over its passes: the machine as calibrated. A loop
program's passes can read in two states (on a 2-core VM small kernels in a loop ran 1.5–2.5× slower
for tens of seconds at a time), so its loop kernels also keep their time at the median of the
passes (``Point.usual_seconds``), fitted into their own curves (``KernelCalibration.usual_classes``)
and read into a second expected time (``Expected.usual_seconds``). Every figure below is derived by
hand beside its assertion.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from neural_cost import Coverage, Trace, estimate_trace
from neural_cost.analysis.calibration_history import Entry, merged
from neural_cost.analysis.expected import Expected, expected_time
from neural_cost.analysis.profiled_points import _profiled_points, usual_ratio
from neural_cost.hardware.kernel_model import KernelCalibration, Point, fit_calibration
from neural_cost.report.expected_text import calibration_lines, usual_line
from tests.analysis.test_calibration_history import MACHINE, VERSIONS
from tests.analysis.test_kernel_bound import SPEC
from tests.analysis.test_loop_calibration import _prepared
from tests.analysis.test_loop_dots import _cell

US = 1e-6


def test_a_loop_programs_usual_time_is_the_median_of_its_passes():
    """``test_loop_calibration``'s loop of 10 trips and its twin of 2, three passes: walls 14.5, 23.3,
    21.7 µs and 7.3, 9.5, 9.3 µs. Fastest: (14.5 − 7.3) / 8 × 10 = 9 µs a run. Each pass's own loop:
    7.2, 13.8, 12.4 µs of difference, median 12.4 → 12.4 / 8 × 10 = 15.5 µs: 15.5 / 9 = 1.7222× —
    fusion.0's 0.8 µs an execution is 1.3778 µs as usual, copy.2's 0.1 µs 0.17222 µs."""
    prepared = _prepared()
    prepared.walls, prepared.short_walls = [14.5 * US, 23.3 * US, 21.7 * US], [7.3 * US, 9.5 * US, 9.3 * US]
    assert usual_ratio(prepared) == pytest.approx(15.5 / 9, rel=1e-9)
    found = {p.kernel_class: p for p in _profiled_points(prepared) if isinstance(p, Point)}
    assert found["matmul:narrow@loop"].measured_seconds == pytest.approx(0.8 * US, rel=1e-9)
    assert found["matmul:narrow@loop"].usual_seconds == pytest.approx(0.8 * US * 15.5 / 9, rel=1e-9)
    assert found["copy@loop"].usual_seconds == pytest.approx(0.1 * US * 15.5 / 9, rel=1e-9)
    # a pass's wall against its own twin: twins 7.3, 9.5, 12.0 µs make loops of 7.2, 13.8, 9.7 µs, median
    # 9.7 → 12.125 µs, 1.3472× (the walls' and twins' medians apart, 21.7 − 9.5, would read 1.694×)
    prepared.short_walls = [7.3 * US, 9.5 * US, 12.0 * US]
    assert usual_ratio(prepared) == pytest.approx(12.125 / 9, rel=1e-9)
    # a median pass quicker than the smallest pair's difference (loops 7.2, 6, 6 µs: 7.5 µs < 9): never below 1×
    prepared.walls, prepared.short_walls = [14.5 * US, 15 * US, 15 * US], [7.3 * US, 9 * US, 9 * US]
    assert usual_ratio(prepared) == 1.0
    # every pass alike: the usual time is the fastest
    assert usual_ratio(_prepared()) == 1.0


def _calibration() -> KernelCalibration:
    """Three ``matmul:kept@loop`` points at 100, 200, 400 µs of roofline, measured at 1.2× it and
    usually at 2.4× it, and three plain ``matmul`` points (no usual time) at 1.5×."""
    points = [Point("matmul:kept@loop", r * US, r * US / 10, 1.2 * r * US, f"scan {r}", 2.4 * r * US)
              for r in (100, 200, 400)]  # fmt: skip
    points += [Point("matmul", r * US, r * US / 10, 1.5 * r * US, f"mm {r}") for r in (100, 200, 400)]
    return fit_calibration("jax", SPEC, points, machine=MACHINE, versions=VERSIONS, date="2026-12-04")


def test_loop_classes_get_a_usual_curve_and_the_usual_state_reads_it():
    calibration = _calibration()
    # the member and its family (matmul@loop: a member's points are its family's too); plain matmul none
    assert set(calibration.usual_classes) == {"matmul:kept@loop", "matmul@loop"}
    usual = calibration.usual_state()
    assert usual is not None and usual.usual_classes == {} and usual.usual_state() is None
    # three points make one knot, at the median roofline time (200 µs) and the median ratio: 1.2× fast,
    # 2.4× usual: 240 µs and 480 µs there; a plain matmul reads 1.5× (300 µs) in both
    assert calibration.classes["matmul:kept@loop"].seconds(200 * US, 0) == pytest.approx(240 * US)
    assert usual.classes["matmul:kept@loop"].seconds(200 * US, 0) == pytest.approx(480 * US)
    assert usual.classes["matmul"].seconds(200 * US, 0) == calibration.classes["matmul"].seconds(200 * US, 0)
    assert usual.floors()["matmul:kept@loop"] == pytest.approx(240 * US)  # its quickest usual point: 2.4 × 100 µs
    assert calibration.usual_state() is not None and _without_usual(calibration).usual_state() is None


def _without_usual(calibration: KernelCalibration) -> KernelCalibration:
    return replace(
        calibration, usual_classes={}, points=tuple(replace(p, usual_seconds=None) for p in calibration.points)
    )


def test_the_expected_time_with_its_loops_as_usual():
    """``test_loop_dots``' scanned cell at batch 16, 256 → 512: its two kept products run 64 times a run,
    each execution at most 11.1 µs of roofline — under the kept curve's one knot (200 µs), where a
    curve falls with the work down to the class's quickest point: 120 µs fast (1.2 × 100 µs), 240 µs
    as usual. So each product reads 64 × 120 µs = 7.68 ms fast, 15.36 ms as usual; the rest (the
    add, the product run once) reads the same in both: the usual time is 2 × 64 × 120 µs = 15.36 ms more."""
    ops = _cell(16, 256, 512)
    estimate = estimate_trace(Trace(ops, Coverage.full(ops), framework="jax"))
    expected = expected_time(estimate, _calibration(), machine=MACHINE)
    rows = {row.name: row for row in expected.rows}
    assert rows["xw"].kernel_class == "matmul:kept@loop" and rows["xw"].seconds == pytest.approx(64 * 120 * US)
    assert expected.usual_seconds == pytest.approx(expected.seconds + 2 * 64 * 120 * US)
    assert Expected.from_dict(expected.to_dict()).usual_seconds == pytest.approx(expected.usual_seconds)
    # a calibration made before usual times were kept, or a program without a loop's kernel: none
    assert expected_time(estimate, _without_usual(_calibration()), machine=MACHINE).usual_seconds is None
    once = ops[-1:]
    plain = estimate_trace(Trace(once, Coverage.full(once), framework="jax"))
    assert expected_time(plain, _calibration(), machine=MACHINE).usual_seconds is None


def test_usual_times_and_curves_survive_a_save_and_an_older_file_has_none():
    calibration = _calibration()
    again = KernelCalibration.from_dict(calibration.to_dict())
    assert again.usual_classes == calibration.usual_classes and again.points == calibration.points
    older = calibration.to_dict()
    del older["usual_classes"]
    for point in older["points"]:
        point.pop("usual_seconds", None)
    read = KernelCalibration.from_dict(older)
    assert read.usual_classes == {} and all(p.usual_seconds is None for p in read.points)


def test_merged_calibrations_keep_the_median_of_a_loop_kernels_fastest_and_usual_times_in_one_state():
    """Three calibrations of the kept loop point "scan 100": fastest 120, 200, 150 µs and usual 300,
    250 µs and none (made before usual times were kept). Merged with no wake-up measured (no second
    host state seen): the median of the fastest, 150 µs (``test_calibration_history``: the smallest where
    the host was seen in two states), and the higher middle of the two usual times, 300 µs (a state that
    ran: their mean, 275 µs, is neither); a plain matmul point has none."""
    history: list[Entry] = []
    for fast, usual in ((120, 300), (200, 250), (150, None)):
        base = _calibration()
        points = tuple(
            replace(p, measured_seconds=fast * US, usual_seconds=None if usual is None else usual * US)
            if p.name == "scan 100" else p
            for p in base.points
        )  # fmt: skip
        calibration, history = merged(replace(base, points=points), history)
    found = {p.name: p for p in calibration.points}
    assert found["scan 100"].measured_seconds == pytest.approx(150 * US)
    assert found["scan 100"].usual_seconds == pytest.approx(300 * US)
    assert found["mm 100"].usual_seconds is None
    assert Entry.from_dict(history[0].to_dict()) == history[0]


def _expected(seconds: float, usual: float | None) -> Expected:
    return Expected(seconds, seconds, None, (), "jax", None, None, "2026-12-04", usual_seconds=usual)


def test_the_usual_line_says_how_much_slower_and_the_observed_ratio():
    assert usual_line(_expected(1e-3, None)) is None
    assert usual_line(_expected(1e-3, 1.04e-3)) is None  # under 5% apart: not worth a line
    line = usual_line(_expected(1e-3, 1.9e-3), observed_seconds=1.9e-3)
    assert line is not None and line.startswith("expected with its loops as usual: 1.900 ms (1.90× the expected")
    assert line.endswith("; observed is 1.00× it")


def test_the_calibration_summary_says_its_loops_usual_ratio():
    lines = calibration_lines(_calibration())
    # 2 usual classes; each kept point's usual ÷ fastest is 2.4 / 1.2 = 2.00×, three points
    assert any(line.startswith("loops as usual: 2 loop classes' curves") and "2.00× their fastest (median of 3" in line
               for line in lines)  # fmt: skip
    assert not any(line.startswith("loops as usual") for line in calibration_lines(_without_usual(_calibration())))


def test_the_report_prints_the_usual_line_under_the_expected_one_and_keeps_it_in_its_json(tmp_path):
    """The scanned cell of ``test_the_expected_time_with_its_loops_as_usual``: its usual time is 15.36 ms
    above its expected one; observed at 30 ms, the usual line's ratio is 30 ms ÷ its usual time."""
    import json

    from neural_cost import analyze_gap
    from neural_cost.report.load import load_report
    from tests.helpers import cpu_measurement

    ops = _cell(16, 256, 512)
    estimate = estimate_trace(Trace(ops, Coverage.full(ops), framework="jax"))
    expected = expected_time(estimate, _calibration(), machine=MACHINE)
    assert expected.usual_seconds is not None
    report = analyze_gap(estimate, cpu_measurement((30e-3,) * 5), SPEC, expected=expected)
    lines = [line.strip() for line in report.render().splitlines()]
    at = next(i for i, line in enumerate(lines) if line.startswith("expected: "))
    assert lines[at + 1].startswith("expected with its loops as usual: ")
    assert lines[at + 1].endswith(f"; observed is {30e-3 / expected.usual_seconds:.2f}× it")
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report.to_dict()))
    reloaded = load_report(path)
    assert reloaded.expected == report.expected and reloaded.expected.usual_seconds == expected.usual_seconds


def test_a_usual_curve_flatter_past_its_last_knot_never_reads_a_kernel_faster():
    """Six kept points in two knots: roofline 0.1, 0.2, 0.4 µs at 3× (usual 6×) and 1, 2, 4 µs at 1.5×
    (usual 1.575×). Fast knots 0.6 µs at 0.2 µs and 3 µs at 2 µs: past them a slope of (3 − 0.6) / 1.8 =
    1.333; usual knots 1.2 µs and 3.15 µs, slope 1.95 / 1.8 = 1.083. The cell's products (4.2–11.1 µs of
    roofline an execution) lie past both: at 11.1 µs fast 3 + 9.1 × 1.333 = 15.13 µs, usual 3.15 + 9.1 ×
    1.083 = 13.01 µs — lower. Each kernel keeps at least its expected time, so no kernel reads slower as
    usual and there is no usual time."""
    cells = ((0.1, 3, 6), (0.2, 3, 6), (0.4, 3, 6), (1, 1.5, 1.575), (2, 1.5, 1.575), (4, 1.5, 1.575))
    points = [Point("matmul:kept@loop", r * US, r * US / 10, k * r * US, f"scan {r}", u * r * US) for r, k, u in cells]
    calibration = fit_calibration("jax", SPEC, points, machine=MACHINE, versions=VERSIONS, date="2026-12-04")
    ops = _cell(16, 256, 512)
    estimate = estimate_trace(Trace(ops, Coverage.full(ops), framework="jax"))
    expected = expected_time(estimate, calibration, machine=MACHINE)
    usual = calibration.usual_state()
    assert usual is not None
    raw = {row.name: row.seconds for row in expected_time(estimate, usual, machine=MACHINE).rows}
    assert all(raw[row.name] < row.seconds for row in expected.rows if row.name in ("xw", "hw"))  # read alone: lower
    assert expected.usual_seconds is None
