"""The host's state when a program ran: its cross-core wake-up, and the expected time in that state.

A calibration keeps its loop programs' fastest and usual times (``test_usual_loops``) and the host's
cross-core wake-up (``hardware.wake``) before the passes each came from (``KernelCalibration.loop_wakes``).
With the wake-up measured when a program runs, ``loops_now`` reads its loop kernels in the state whose
calibrated wake-up lies nearer, geometrically: at their fastest, or their usual times and more past the
usual wake-up (``Expected.now_seconds``). Every figure below is derived by hand beside its assertion.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from neural_cost import Coverage, Trace, estimate_trace
from neural_cost.analysis.calibration_history import HISTORY, Entry, merged
from neural_cost.analysis.expected import Expected, expected_time
from neural_cost.analysis.profiled_points import loop_wakes, pass_wakes
from neural_cost.analysis.usual_loops import MAX_SHARE, loops_now
from neural_cost.core.errors import HardwareError
from neural_cost.hardware import wake
from neural_cost.hardware.kernel_model import KernelCalibration, Point
from neural_cost.report.expected_text import calibration_lines, now_line
from tests.analysis.test_calibration_history import MACHINE
from tests.analysis.test_kernel_bound import SPEC
from tests.analysis.test_loop_calibration import _prepared
from tests.analysis.test_loop_dots import _cell
from tests.analysis.test_usual_loops import _calibration

US = 1e-6


TWO_CORES = hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) >= 2


@pytest.mark.skipif(not TWO_CORES, reason="needs two cores (and Linux's sched_setaffinity) to wake one from the other")
def test_a_cross_core_wake_up_is_measured_and_the_callers_cores_are_restored():
    before = os.sched_getaffinity(0)
    found = wake.cross_core_wake(50)
    assert found is not None and 0 < found < 0.1  # a round trip: microseconds, never a tenth of a second
    assert os.sched_getaffinity(0) == before


def test_a_wake_up_needs_two_cores_and_a_round_trip(monkeypatch):
    with pytest.raises(ValueError, match="at least one round trip"):
        wake.cross_core_wake(0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert wake.cross_core_wake() is None  # one core: nothing to wake across
    assert wake.mean_wake(6 * US, 10 * US) == pytest.approx(8 * US)
    assert wake.mean_wake(None, 10 * US) == 10 * US and wake.mean_wake(None, None) is None


@pytest.mark.skipif(not TWO_CORES, reason="needs two cores (and Linux's sched_setaffinity) to wake one from the other")
def test_a_wake_up_that_cannot_pin_its_threads_is_none_and_leaves_no_thread_or_mask_behind(monkeypatch):
    import threading

    real, before = os.sched_setaffinity, os.sched_getaffinity(0)

    def peer_refused(pid, cores):
        if threading.current_thread().name == "neural-cost-wake":
            raise OSError("not allowed")
        real(pid, cores)

    monkeypatch.setattr(os, "sched_setaffinity", peer_refused)
    assert wake.cross_core_wake(20) is None  # the peer could not move to its core: no figure
    assert os.sched_getaffinity(0) == before

    def refused(pid, cores):
        raise OSError("not allowed")

    monkeypatch.setattr(os, "sched_setaffinity", refused)
    assert wake.cross_core_wake(20) is None  # nor the caller (its mask cannot be restored either: no error)
    assert not any(thread.name == "neural-cost-wake" for thread in threading.enumerate())


def test_a_loop_programs_passes_are_each_preceded_by_a_wake_up(monkeypatch):
    """``test_loop_calibration``'s loop program timed twice: one wake-up before each pass, in order."""
    from neural_cost.analysis import calibrate_kernels

    readings = iter([6e-6, 9e-6])
    monkeypatch.setattr(calibrate_kernels, "cross_core_wake", lambda: next(readings))
    prepared = _prepared()
    assert prepared.wakes == [6e-6, 9e-6] and len(prepared.walls) == 2


def test_a_loop_programs_passes_say_the_host_state_of_its_fastest_and_usual_times():
    """``test_usual_loops``' passes: walls 14.5, 23.3, 21.7 µs, twins 7.3, 9.5, 9.3 µs. The fastest wall is
    the first pass's; the pass loops 7.2, 13.8, 12.4 µs have their higher middle, 12.4 µs, in the third: the
    wake-ups before those passes, 6.5 and 10.5 µs. A pass without its wake-up measured: none."""
    prepared = _prepared()
    prepared.walls, prepared.short_walls = [14.5 * US, 23.3 * US, 21.7 * US], [7.3 * US, 9.5 * US, 9.3 * US]
    prepared.wakes = [6.5 * US, 16.0 * US, 10.5 * US]
    assert pass_wakes(prepared) == (6.5 * US, 10.5 * US)
    prepared.wakes = [6.5 * US, 16.0 * US, None]
    assert pass_wakes(prepared) is None
    prepared.wakes = []
    assert pass_wakes(prepared) is None
    # over three loop programs: the medians of (6, 7, 6.5) and (10, 18, 12) µs
    found = loop_wakes([(6 * US, 10 * US), (7 * US, 18 * US), (6.5 * US, 12 * US)])
    assert found == pytest.approx((6.5 * US, 12 * US))
    assert loop_wakes([]) is None


def _expected(seconds: float, usual: float | None) -> Expected:
    return Expected(seconds, seconds, None, (), "jax", None, None, "2026-12-05", usual_seconds=usual)


def test_the_expected_time_now_places_the_loop_kernels_by_the_wake_up():
    """Expected 1.0 ms, 1.6 ms as usual; the calibration's wake-ups 6.5 µs (fastest passes) and 10.5 µs
    (usual), their geometric mean √(6.5 × 10.5) = 8.26 µs. At 16.5 µs the share is (16.5 − 6.5) / (10.5 −
    6.5) = 2.5: 1.0 + 0.6 × 2.5 = 2.5 ms. At 8.5 µs, past the mean: the usual state, (8.5 − 6.5) / 4 = 0.5
    read as 1: 1.6 ms. At 8.0 µs, under it: the fast state, 1.0 ms; at 5 µs (quieter than calibrated) too."""
    wakes = (6.5 * US, 10.5 * US)
    assert loops_now(_expected(1e-3, 1.6e-3), wakes, 16.5 * US).now_seconds == pytest.approx(2.5e-3)
    assert loops_now(_expected(1e-3, 1.6e-3), wakes, 8.5 * US).now_seconds == pytest.approx(1.6e-3)
    assert loops_now(_expected(1e-3, 1.6e-3), wakes, 8.0 * US).now_seconds == pytest.approx(1e-3)
    at_mean = (6.5 * 10.5) ** 0.5 * US  # at the geometric mean itself: still the fast state
    assert loops_now(_expected(1e-3, 1.6e-3), wakes, at_mean).now_seconds == pytest.approx(1e-3)
    assert loops_now(_expected(1e-3, 1.6e-3), wakes, float("nan")).now_seconds is None  # no reading, no state
    assert loops_now(_expected(1e-3, 1.6e-3), wakes, 5 * US).now_seconds == pytest.approx(1e-3)
    # at 50 µs the share would be 10.875, far past what was ever measured: held at MAX_SHARE, 2.5 (2.5 ms)
    assert MAX_SHARE == 2.5
    assert loops_now(_expected(1e-3, 1.6e-3), wakes, 50 * US).now_seconds == pytest.approx(2.5e-3)
    kept = loops_now(_expected(1e-3, 1.6e-3), wakes, 16.5 * US)
    assert kept.wake_seconds == 16.5 * US and kept.loop_wakes == wakes
    # none: no usual time, no wake-up, no calibrated states, or two states under 1.5× apart (6.5 and 7.5 µs)
    assert loops_now(_expected(1e-3, None), wakes, 16.5 * US).now_seconds is None
    assert loops_now(_expected(1e-3, 1.6e-3), wakes, None).now_seconds is None
    assert loops_now(_expected(1e-3, 1.6e-3), None, 16.5 * US).now_seconds is None
    assert loops_now(_expected(1e-3, 1.6e-3), (6.5 * US, 7.5 * US), 16.5 * US).now_seconds is None


def test_the_now_line_says_the_wake_ups_and_the_observed_ratio():
    wakes = (6.5 * US, 10.5 * US)
    line = now_line(loops_now(_expected(1e-3, 1.6e-3), wakes, 16.5 * US), 2.0e-3)
    # 2.5 ms is 2.50× the expected time; observed 2 ms is 0.80× it
    assert line is not None and line.startswith("expected in the host's state now: 2.500 ms (2.50× the expected")
    assert "took 16.5 µs just after the timed runs, 6.5 µs before" in line and "10.5 µs before its usual" in line
    assert line.endswith("read at their usual times, more past the usual wake-up); observed is 0.80× it")  # 2.5
    held = now_line(loops_now(_expected(1e-3, 1.6e-3), wakes, 50 * US))
    assert held is not None and held.endswith(
        "it lies past 2.5 spans of those two, past what the calibration and the held-out scan measured: held there)"
    )
    # 6.7 µs, under the 8.26 µs mean: the fast state, said (the usual line is printed: which one applies)
    quiet = now_line(loops_now(_expected(1e-3, 1.6e-3), wakes, 6.7 * US))
    assert quiet is not None and quiet.startswith("expected in the host's state now: 1.000 ms (1.00× the expected")
    assert quiet.endswith("its loops' kernels read at their fastest times (the quiet state: the expected time))")
    # no line without a time now, nor where the usual time is under 5% over the expected one (no usual line)
    assert now_line(_expected(1e-3, 1.6e-3)) is None
    assert now_line(loops_now(_expected(1e-3, 1.04e-3), wakes, 16.5 * US)) is None


def test_a_calibrations_host_states_survive_a_save_an_older_file_has_none_and_bad_ones_are_refused():
    calibration = replace(_calibration(), loop_wakes=(6.5 * US, 10.5 * US))
    assert KernelCalibration.from_dict(calibration.to_dict()).loop_wakes == (6.5 * US, 10.5 * US)
    older = calibration.to_dict()
    del older["loop_wakes"]
    assert KernelCalibration.from_dict(older).loop_wakes is None
    bad = {**calibration.to_dict(), "loop_wakes": {"fastest": -1.0, "usual": 10.5 * US}}
    with pytest.raises(HardwareError, match="loop_wakes"):
        KernelCalibration.from_dict(bad)


def test_merged_calibrations_keep_the_quietest_fastest_state_and_the_median_usual_one():
    """Three calibrations' wake-ups (fastest, usual): (6.5, 10), (7, 12), (6, 9) µs. Merged: the smallest
    fastest, 6 µs (the loop kernels keep their smallest times), and the higher middle of the usual ones,
    10 µs (as the usual times: median_high; all three lie past the two states' line √(6 × 12) = 8.49 µs).
    A fourth, made before they were measured, pushes the first out of the ``HISTORY`` of three: (7, 12) and
    (6, 9) are left, 6 µs and the higher of 12 and 9 µs."""
    assert HISTORY == 3
    history: list[Entry] = []
    for wakes in ((6.5, 10.0), (7.0, 12.0), (6.0, 9.0)):
        calibration, history = merged(replace(_calibration(), loop_wakes=(wakes[0] * US, wakes[1] * US)), history)
    assert calibration.loop_wakes == pytest.approx((6 * US, 10 * US))
    assert Entry.from_dict(history[0].to_dict()) == history[0] and history[0].wakes == (6.5 * US, 10 * US)
    calibration, history = merged(replace(_calibration(), loop_wakes=None), history)
    assert calibration.loop_wakes == pytest.approx((6 * US, 12 * US))
    with pytest.raises(ValueError, match="not a pair"):  # a saved entry with one wake-up: refused (and dropped)
        Entry.from_dict({**history[0].to_dict(), "loop_wakes": [6 * US]})


def _stated(fast: float, usual: float, scan_usual: float, when: str) -> tuple[KernelCalibration, str]:
    """``_calibration`` with wake-ups (fastest, usual) in µs and its loop point "scan 100"'s usual time in µs."""
    base = _calibration()
    points = tuple(replace(p, usual_seconds=scan_usual * US) if p.name == "scan 100" else p for p in base.points)
    return replace(base, points=points, loop_wakes=(fast * US, usual * US)), when


def test_a_calibration_in_the_slower_host_state_is_kept_past_the_last_three_while_none_of_them_saw_it():
    """A calibration with the host busy (wake-ups 7 / 18 µs, "scan 100" usually 300 µs), then three with it quiet
    (7 / 7.5, 6.8 / 7.2, 7.1 / 7.3 µs; usually 150 µs). The last three alone saw one state: their slowest usual
    wake-up, 7.5 µs, is under 1.5 × 6.8 = 10.2 µs. Beside them the busy one (made 3 h before the newest, within
    a day) is alone past the line √(6.8 × 18) = 11.06 µs, and 18 ≥ 10.2 µs, so it is kept — the usual wake-up
    18 µs and "scan 100"'s usual time 300 µs; its fastest and every plain point still the last three's. A fifth,
    busy again (7 / 17 µs, usually 280 µs): the last three now saw two states themselves (17 ≥ 10.2 µs, the line
    √(6.8 × 17) = 10.75 µs, the new one alone past it), so the old one is dropped: 17 µs and 280 µs."""
    history: list[Entry] = []
    made = [_stated(7, 18, 300, "2026-12-05T01:00"), _stated(7, 7.5, 150, "2026-12-05T02:00"),
            _stated(6.8, 7.2, 150, "2026-12-05T03:00"), _stated(7.1, 7.3, 150, "2026-12-05T04:00")]  # fmt: skip
    for calibration, when in made:
        calibration, history = merged(calibration, history, when)
    scan = next(p for p in calibration.points if p.name == "scan 100")
    assert calibration.loop_wakes == pytest.approx((6.8 * US, 18 * US))
    assert scan.usual_seconds == pytest.approx(300 * US) and scan.measured_seconds == pytest.approx(120 * US)
    assert [e.when for e in history] == ["2026-12-05T01:00", "2026-12-05T02:00", "2026-12-05T03:00", "2026-12-05T04:00"]
    assert calibration.notes[-1].count("2026-12-05 01:00") == 2  # named as the slower state's, and as kept
    assert "from the 1 made in the slower host state (2026-12-05 01:00), 2026-12-05 01:00 kept" in calibration.notes[-1]
    alone, _ = merged(made[3][0], history[1:3], "2026-12-05T04:00")  # the last three without it: one state
    assert alone.loop_wakes == pytest.approx((6.8 * US, 7.3 * US))
    calibration, history = merged(_stated(7, 17, 280, "")[0], history, "2026-12-05T05:00")
    assert [e.when for e in history] == ["2026-12-05T03:00", "2026-12-05T04:00", "2026-12-05T05:00"]
    scan = next(p for p in calibration.points if p.name == "scan 100")
    assert calibration.loop_wakes == pytest.approx((6.8 * US, 17 * US))
    assert scan.usual_seconds == pytest.approx(280 * US)


def test_a_calibration_is_carried_a_day_at_most_the_latest_first_and_a_point_it_lacks_has_no_usual_time():
    """``_stated`` calibrations. Busy ones at 01:00 (7 / 18 µs) and 02:00 (7 / 40 µs), then three quiet ones
    (as in the test above) at 03:00–05:00: the latest of the older two that alone is past the line is kept —
    02:00 (√(6.8 × 40) = 16.5 µs: only it past it), not the slowest first: the usual wake-up 40 µs. Made a day
    and a minute before the newest quiet one, it is not kept: one state (7.5 µs under 8.16 µs), no split note.
    And where the kept one lacks a loop point's usual time, that point has none (its quiet times belong to the
    other state): "scan 200" kept no usual time in the busy calibration."""
    from neural_cost.analysis.calibration_history import carried, entry_of

    made = (((7, 7.5), "2026-12-05T03:00"), ((6.8, 7.2), "2026-12-05T04:00"), ((7.1, 7.3), "2026-12-05T05:00"))
    quiet = [entry_of(_stated(*wakes, 150, "")[0], when) for wakes, when in made]
    first = entry_of(_stated(7, 18, 300, "")[0], "2026-12-05T01:00")
    second = entry_of(_stated(7, 40, 300, "")[0], "2026-12-05T02:00")
    assert carried([first, second], quiet) == [second]
    stale = entry_of(_stated(7, 18, 300, "")[0], "2026-12-04T04:59")
    assert carried([stale], quiet) == []
    lacking = replace(second, usual={k: v for k, v in second.usual.items() if not k.startswith("scan 200 ")})
    calibration, history = merged(_stated(7.1, 7.3, 150, "")[0], [lacking, *quiet[:2]], "2026-12-05T05:00")
    assert [e.when for e in history] == ["2026-12-05T02:00", *(e.when for e in quiet)]
    usual = {p.name: p.usual_seconds for p in calibration.points if p.name.startswith("scan")}
    assert usual["scan 100"] == pytest.approx(300 * US) and usual["scan 200"] is None
    assert calibration.loop_wakes == pytest.approx((6.8 * US, 40 * US))
    alone, _ = merged(_stated(7.1, 7.3, 150, "")[0], [stale, *quiet[:2]], "2026-12-05T05:00")
    assert alone.loop_wakes == pytest.approx((6.8 * US, 7.3 * US)) and "slower host state" not in alone.notes[-1]


def test_the_calibration_summary_says_its_host_states():
    lines = calibration_lines(replace(_calibration(), loop_wakes=(6.5 * US, 10.5 * US)))
    assert any(line.startswith("host state: a cross-core wake-up took 6.5 µs before the loop programs' fastest")
               and line.endswith("`expected in the host's state now`)") for line in lines)  # fmt: skip
    one = calibration_lines(replace(_calibration(), loop_wakes=(6.5 * US, 7 * US)))
    assert any(line.endswith(": one state seen, none expected now)") for line in one)
    assert not any(line.startswith("host state") for line in calibration_lines(_calibration()))


def test_the_report_prints_the_now_line_and_keeps_the_host_state_in_its_json(tmp_path):
    """``test_usual_loops``' scanned cell: its usual time is 2 × 64 × 120 µs = 15.36 ms above the expected
    one. Wake-ups 6.5 / 10.5 µs calibrated, 8.5 µs now (past their geometric mean, 8.26 µs): the usual state,
    15.36 ms above."""
    from neural_cost import analyze_gap
    from neural_cost.report.load import load_report
    from neural_cost.report.validate import validate_v2
    from tests.helpers import cpu_measurement

    ops = _cell(16, 256, 512)
    estimate = estimate_trace(Trace(ops, Coverage.full(ops), framework="jax"))
    calibration = replace(_calibration(), loop_wakes=(6.5 * US, 10.5 * US))
    expected = loops_now(expected_time(estimate, calibration, machine=MACHINE), calibration.loop_wakes, 8.5 * US)
    assert expected.now_seconds == pytest.approx(expected.seconds + 2 * 64 * 120 * US)
    report = analyze_gap(estimate, cpu_measurement((30e-3,) * 5), SPEC, expected=expected)
    lines = [line.strip() for line in report.render().splitlines()]
    at = next(i for i, line in enumerate(lines) if line.startswith("expected: "))
    assert lines[at + 1].startswith("expected with its loops as usual: ")
    assert lines[at + 2].startswith("expected in the host's state now: ")
    data = report.to_dict()
    validate_v2(data)
    assert data["expected"]["loop_wakes"] == [6.5 * US, 10.5 * US] and data["expected"]["wake_seconds"] == 8.5 * US
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    assert load_report(path).expected.now_seconds == pytest.approx(expected.now_seconds)
    # the expected time itself is the calibrated machine's: the host's state adds a line, never moves it
    assert expected.seconds == expected_time(estimate, calibration, machine=MACHINE).seconds


def test_an_eager_recurrent_layer_is_a_loop_its_passes_give_its_usual_time_and_host_states(monkeypatch):
    """A PyTorch LSTM layer, wall-timed whole (``rnn``): three passes whose medians read 3, 5 and 4 ms after
    wake-ups of 6, 17 and 9 µs. Its point is the fastest, 3 ms; its usual time the higher middle pass, 4 ms
    (4 / 3 of it); the host states those came from: 6 µs (the 3 ms pass) and 9 µs (the 4 ms one)."""
    torch = pytest.importorskip("torch")
    from neural_cost.adapters import adapter_for
    from neural_cost.adapters.base import MicroProgram
    from neural_cost.analysis import calibrate_kernels
    from neural_cost.analysis.calibrate_kernels import _prepare, _time_once
    from neural_cost.analysis.wall_points import looped, wall_points
    from neural_cost.measure.timing import Measurement

    layer = torch.nn.LSTM(16, 32)
    program = MicroProgram("lstm", layer, (torch.zeros(8, 2, 16),))
    adapter = adapter_for("torch")
    prepared = _prepare(adapter, SPEC, program)
    assert looped(prepared)
    medians, readings = iter([3e-3, 5e-3, 4e-3]), iter([6 * US, 17 * US, 9 * US])
    monkeypatch.setattr(calibrate_kernels, "cross_core_wake", lambda: next(readings))
    monkeypatch.setattr(calibrate_kernels, "time_workload",
                        lambda *args, **kwargs: Measurement(samples_seconds=(next(medians),)))  # fmt: skip
    monkeypatch.setattr(calibrate_kernels, "harness_seconds", lambda adapter: 0.0)  # walls as given (test_harness.py)
    for _ in range(3):
        _time_once(adapter, prepared)
    (pending,) = wall_points(prepared)  # the layer and its zero-filled initial states: resolved later
    assert pending.main.kernel_class.startswith("rnn") and not isinstance(pending, Point)
    assert pending.seconds == pytest.approx(3e-3) and pending.usual_seconds == pytest.approx(4e-3)
    assert pass_wakes(prepared) == (6 * US, 9 * US)
    from neural_cost.analysis.calibrate_kernels import _resolve

    # its other kernels: one plain matmul of 200 µs of roofline, which ``_calibration`` reads at 1.5×: 0.3 ms.
    # The layer: 3 − 0.3 = 2.7 ms, 4 − 0.3 = 3.7 ms as usual; a point per step, its 8 steps: 337.5 / 462.5 µs
    from neural_cost.analysis.kernel_classes import Part

    assert pending.main.repeats == 8
    others = replace(pending, others=(Part("matmul", 200 * US, 20 * US, 1),))
    (point,), _ = _resolve([others], _calibration())
    assert point.measured_seconds == pytest.approx(2.7e-3 / 8) and point.usual_seconds == pytest.approx(3.7e-3 / 8)


def test_a_calibration_of_one_host_state_says_which_way_a_program_s_loops_can_move_and_no_more():
    """A calibration whose loop passes all ran at 18.5–18.6 µs (under 1.5× apart: one state, no expectation
    now). Measured at 7.6 µs (18.5 / 7.6 = 2.4×, past 1.5×): quieter, its loops can run faster; at 30 µs
    (1.6× past 18.6): busier; at 15 µs (1.23× under): nothing said. A program without a loop's kernel: nothing."""
    from neural_cost.report.expected_text import HOST_APART, host_note

    assert HOST_APART == 1.5
    ops = _cell(16, 256, 512)
    estimate = estimate_trace(Trace(ops, Coverage.full(ops), framework="jax"))
    expected = expected_time(estimate, _calibration(), machine=MACHINE)
    one = (18.5 * US, 18.6 * US)
    quiet = loops_now(expected, one, 7.6 * US)
    assert quiet.now_seconds is None
    note = host_note(quiet)
    assert note is not None and note.startswith("host state: a cross-core wake-up took 7.6 µs just after the timed")
    assert "quieter now than when calibrated: its loops' kernels can run faster than expected" in note
    assert note.endswith("`neural-cost calibrate --kernels --framework jax` in this state measures them)")
    busy = host_note(loops_now(expected, one, 30 * US))
    assert busy is not None and "busier now than when calibrated: its loops' kernels can run slower" in busy
    assert host_note(loops_now(expected, one, 15 * US)) is None
    assert host_note(loops_now(expected, (6.5 * US, 10.5 * US), 30 * US)) is None  # two states: the now line
    flipped = host_note(loops_now(expected, (18.6 * US, 18.5 * US), 7.6 * US))  # a pair either way round: the same
    assert flipped is not None and "took 7.6 µs just after the timed runs, 18.5 µs–18.6 µs before" in flipped
    once = ops[-1:]
    plain = expected_time(estimate_trace(Trace(once, Coverage.full(once), framework="jax")), _calibration())
    assert host_note(loops_now(plain, one, 7.6 * US)) is None


def test_a_wall_timed_program_of_no_recurrent_layer_is_no_loop():
    """A PyTorch matmul timed by its wall: no extra passes, no wake-ups, no usual time."""
    torch = pytest.importorskip("torch")
    from neural_cost.adapters import adapter_for
    from neural_cost.adapters.base import MicroProgram
    from neural_cost.analysis.calibrate_kernels import _prepare
    from neural_cost.analysis.wall_points import looped, usual_of

    program = MicroProgram("mm", torch.matmul, (torch.ones(64, 64), torch.ones(64, 64)))
    prepared = _prepare(adapter_for("torch"), SPEC, program)
    prepared.walls = [3e-3, 5e-3, 4e-3]  # even with passes kept, it has no usual time
    assert not looped(prepared) and usual_of(prepared) is None
