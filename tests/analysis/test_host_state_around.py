"""The host's state read on both sides of the timed runs: just before the first (after the warm-up) and just
after the last, as the benchmark reads a pass (``hardware.wake.mean_wake``).

A state that lasts tens of seconds reads alike on both sides of a few hundred milliseconds of timed runs;
where the two readings fall on the two sides of the calibration's dividing line (the geometric mean of its
two wake-ups) the host changed state while the runs were timed, and the report says so. Every figure below
is derived by hand beside its assertion.
"""

from __future__ import annotations

import json

import pytest

from neural_cost.analysis.expected import Expected
from neural_cost.analysis.usual_loops import changed_state, loops_now, split_state
from neural_cost.measure.timing import before_timing, benchmark
from neural_cost.report.expected_text import host_note, now_line

US = 1e-6
WAKES = (6.5 * US, 10.5 * US)  # the calibration's two states; their geometric mean is √(6.5 × 10.5) = 8.26 µs


def _expected(seconds: float = 1e-3, usual: float | None = 1.6e-3) -> Expected:
    return Expected(seconds, seconds, None, (), "jax", None, None, "2026-12-05", usual_seconds=usual)


def test_the_state_is_read_after_the_warm_up_just_before_the_first_timed_run_and_only_inside_the_block():
    events: list[str] = []

    def run() -> None:
        events.append("run")

    with before_timing(lambda: events.append("before")):
        benchmark(run, warmup=2, repeats=3)
    # two warm-up runs, the reading, one untimed run after it, three timed runs
    assert events == ["run", "run", "before", "run", "run", "run", "run"]
    events.clear()
    benchmark(run, warmup=1, repeats=1)  # outside the block: no reading
    assert events == ["run", "run"]


def test_the_expected_time_now_reads_each_of_the_two_and_keeps_both():
    """Expected 1.0 ms, 1.6 ms as usual. 6.5 µs before, 12.5 µs after: 6.5 µs is the quiet state, 1.0 ms;
    12.5 µs is past the 8.26 µs line, share (12.5 − 6.5) ÷ (10.5 − 6.5) = 1.5: 1.0 + 0.6 × 1.5 = 1.9 ms; the
    figure is their mean, 1.45 ms (the readings' mean, 9.5 µs, would have read 1.6 ms: the usual state for all
    of the runs), and the host changed state (12.5 ≥ 1.5 × 6.5 = 9.75). 9 and 10 µs are both past the line: 1.6 ms
    each, no change. 8.2 and 8.4 µs lie on the two sides of the line but under 1.5× apart: the quiet state's own
    wander, no change said, and the figure is still half-way, (1.0 + 1.6) / 2 = 1.3 ms."""
    read = loops_now(_expected(), WAKES, 12.5 * US, before=6.5 * US)
    assert read.wake_seconds == pytest.approx(9.5 * US) and read.wake_around == (6.5 * US, 12.5 * US)
    assert read.now_seconds == pytest.approx(1.45e-3)
    assert changed_state(read) and split_state(read)
    steady = loops_now(_expected(), WAKES, 10 * US, before=9 * US)
    assert steady.now_seconds == pytest.approx(1.6e-3) and not changed_state(steady) and not split_state(steady)
    wander = loops_now(_expected(), WAKES, 8.4 * US, before=8.2 * US)
    assert wander.now_seconds == pytest.approx(1.3e-3) and split_state(wander) and not changed_state(wander)
    assert not changed_state(loops_now(_expected(), WAKES, 7.0 * US, before=6.6 * US))
    # one reading only (predict's, or one the probe could not measure): that one, as before this change
    after_only = loops_now(_expected(), WAKES, 16.5 * US)
    assert after_only.wake_around is None and after_only.wake_seconds == 16.5 * US and not changed_state(after_only)
    assert after_only.now_seconds == pytest.approx(2.5e-3)  # share (16.5 − 6.5) ÷ 4 = 2.5: 1.0 + 0.6 × 2.5
    before_only = loops_now(_expected(), WAKES, None, before=6.5 * US)
    assert before_only.wake_around is None and before_only.wake_seconds == 6.5 * US
    assert before_only.now_seconds == pytest.approx(1e-3)
    # a calibration of one state has no dividing line: nothing changed that it can tell, no figure
    one = loops_now(_expected(), (6.5 * US, 7.0 * US), 16.5 * US, before=6.5 * US)
    assert not changed_state(one) and one.now_seconds is None


def test_the_now_line_says_both_readings_and_a_change_of_state():
    line = now_line(loops_now(_expected(), WAKES, 12.5 * US, before=6.5 * US), 2.0e-3)
    assert line is not None and line.startswith("expected in the host's state now: 1.450 ms (1.45× the expected")
    assert (
        "a cross-core wake-up took 9.5 µs around the timed runs (the mean of 6.5 µs just before them and 12.5 µs "
        "just after; the host changed state while they ran), 6.5 µs before the calibration's fastest" in line
    )
    assert "its loops' kernels read half at their fastest times and half at their usual ones" in line
    assert line.endswith("; observed is 1.38× it")  # 2.0 ÷ 1.45 = 1.379
    steady = now_line(loops_now(_expected(), WAKES, 10 * US, before=9 * US))
    assert steady is not None and "(the mean of 9.0 µs just before them and 10.0 µs just after), " in steady
    assert "read at their usual times, more past the usual wake-up)" in steady
    # held at MAX_SHARE where either reading lies past 2.5 spans (6.5 + 2.5 × 4 = 16.5 µs): 7 and 30 µs
    held = now_line(loops_now(_expected(), WAKES, 30 * US, before=7 * US))
    assert held is not None and "held there)" in held


def test_the_one_state_note_says_when_it_was_read():
    """A calibration of one state (6.5 and 7 µs: under 1.5× apart); 15 and 17 µs around the runs, mean 16 µs:
    at least 1.5 × 7 = 10.5 µs, busier than calibrated."""
    from neural_cost.analysis.expected import ExpectedRow

    row = ExpectedRow("scan/dot", "matmul@loop", 64, 1e-3, 5e-4, "model")
    expected = Expected(1e-3, 1e-3, None, (row,), "jax", None, None, "2026-12-05")
    note = host_note(loops_now(expected, (6.5 * US, 7.0 * US), 17 * US, before=15 * US))
    assert note is not None and note.startswith(
        "host state: a cross-core wake-up took 16.0 µs around the timed runs (the mean of 15.0 µs just before them "
        "and 17.0 µs just after), 6.5 µs–7.0 µs before"
    )
    assert "busier now than when calibrated" in note


def test_both_readings_survive_the_report_json_and_an_older_report_has_none(tmp_path):
    from neural_cost import Coverage, Trace, analyze_gap, estimate_trace
    from neural_cost.report.load import load_report
    from neural_cost.report.validate import validate_v2
    from tests.analysis.test_kernel_bound import SPEC
    from tests.helpers import cpu_measurement

    estimate = estimate_trace(Trace((), Coverage.full(()), framework="jax"))
    expected = loops_now(_expected(), WAKES, 16.5 * US, before=6.5 * US)
    data = analyze_gap(estimate, cpu_measurement((2e-3,) * 3), SPEC, expected=expected).to_dict()
    validate_v2(data)
    assert data["expected"]["wake_around_seconds"] == [6.5 * US, 16.5 * US]
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    assert load_report(path).expected.wake_around == (6.5 * US, 16.5 * US)
    del data["expected"]["wake_around_seconds"]  # a report written before the field
    validate_v2(data)
    path.write_text(json.dumps(data))
    assert load_report(path).expected.wake_around is None


def test_analyze_workload_reads_the_state_on_both_sides_of_the_runs_it_times(monkeypatch):
    torch = pytest.importorskip("torch")
    from dataclasses import replace

    from neural_cost.adapters import adapter_for
    from neural_cost.analysis import workload
    from tests.analysis.test_usual_loops import _calibration

    readings = iter([7 * US, 17 * US])  # just before the timed runs, then just after them
    monkeypatch.setattr(workload, "cross_core_wake", lambda: next(readings))
    calibration = replace(_calibration(), loop_wakes=WAKES)
    layer = torch.nn.Linear(8, 4)
    report = workload.analyze_workload(
        adapter_for("torch"), layer, (torch.ones(4, 8),), None, warmup=1, repeats=2, profile=False,
        calibration=calibration,
    )  # fmt: skip
    assert report.expected is not None and report.expected.wake_around == (7 * US, 17 * US)
    assert report.expected.wake_seconds == pytest.approx(12 * US)


def test_the_wake_up_pairs_two_physical_cores_where_sysfs_names_the_siblings(tmp_path):
    """Recorded topologies: a VM whose hyper-threads are numbered side by side (cpu0's siblings ``0-1``) pins
    the peer to cpu2, the next core outside cpu0's; one numbered apart (``0,4``) to cpu1. Where every allowed
    core is cpu0's sibling, or sysfs has no topology, the next allowed core."""
    from neural_cost.hardware.wake import core_pair

    def tree(name: str, siblings: str):
        topology = tmp_path / name / "cpu0" / "topology"
        topology.mkdir(parents=True)
        (topology / "thread_siblings_list").write_text(siblings + "\n")
        return tmp_path / name

    assert core_pair([0, 1, 2, 3], tree("side_by_side", "0-1")) == (0, 2)
    assert core_pair([0, 1, 2, 3, 4, 5, 6, 7], tree("apart", "0,4")) == (0, 1)
    assert core_pair([0, 1], tree("one_core_two_threads", "0-1")) == (0, 1)  # only its sibling is allowed
    assert core_pair([2, 5], tmp_path / "no_sysfs") == (2, 5)
