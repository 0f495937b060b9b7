"""The expected-time benchmark's passes (``benchmarks/expected_time.py``): every row gets ``PASSES``
passes and keeps its smallest median; a row whose kept pass ran with its loop probe 1.5× slow or
more is measured again (at most ``SETTLE_PASSES`` more) until a kept pass's probe reads under it; a row
is also scored against its expectation in the host's state before its kept pass (``Row.now``).
Rows here are made by hand: their ``remeasure`` and ``probe`` return scripted figures."""

import pytest

from tests.helpers import load_benchmark

pytest.importorskip("torch")
pytest.importorskip("jax")
pytest.importorskip("tensorflow")

bench = load_benchmark("expected_time.py", "expected_time_benchmark")


def _row(first: float, loop: float, passes: list[float], probes: list[float]):
    times, loops = iter(passes), iter(probes)
    row = bench.Row("scan", 16, first, 1.0, loop=loop, drift=1.0)
    row.remeasure = lambda: next(times)
    row.probe = lambda: (1.0, next(loops), 6e-6)
    return row


def test_a_row_in_a_slow_loop_spell_is_measured_again_until_its_probe_reads_calibrated(monkeypatch):
    monkeypatch.setattr(bench, "SETTLE_GAP", 0.0)
    assert bench.PASSES == 3 and bench.LOOP_OFF == 1.5 and bench.SETTLE_PASSES == 6
    # passes 2 and 3 (PASSES − 1) read 3.4 and 3.5 at probe 1.9× and 2.0×: the kept pass is the
    # second (3.4 < 3.41, at 1.9×), still slow; settle pass 1 reads 3.3 at 1.7× (kept, slow), pass 2
    # 2.2 at 0.9× (kept, under 1.5×): done after 2 settle passes, 5 passes in all.
    slow = _row(3.41, 1.6, [3.4, 3.5, 3.3, 2.2, 1.0], [1.9, 2.0, 1.7, 0.9, 0.9])
    # a row whose kept pass's probe reads 1.2×: its 3 passes only
    steady = _row(1.0, 1.2, [1.1, 1.05], [1.2, 1.2])
    bench.remeasure([slow, steady])
    assert (slow.measured, slow.loop, slow.settled, slow.passes) == (2.2, 0.9, 2, [3.41, 3.4, 3.5, 3.3, 2.2])
    assert (steady.measured, steady.loop, steady.settled, len(steady.passes)) == (1.0, 1.2, 0, 3)


def test_a_row_whose_loops_stay_slow_stops_after_the_settle_passes(monkeypatch):
    monkeypatch.setattr(bench, "SETTLE_GAP", 0.0)
    # every pass reads 2.0× at a slower median than the first: the first stays kept, slow
    stuck = _row(1.0, 2.0, [2.0] * 8, [2.0] * 8)
    bench.remeasure([stuck])
    assert (stuck.measured, stuck.settled, len(stuck.passes)) == (1.0, 6, 3 + 6)
    assert bench.slow_loops(stuck)


def test_a_row_with_no_loop_kernels_is_not_measured_again_for_the_loop_probe(monkeypatch):
    """A CNN's row (no loop kernel: ``looped`` False) whose kept pass ran with the loop probe at 2.0×: its 3
    passes only, and it counts as run with the machine as calibrated (``slow_loops`` False)."""
    monkeypatch.setattr(bench, "SETTLE_GAP", 0.0)
    cnn = _row(1.0, 2.0, [1.1, 1.2, 0.5], [2.0, 2.0, 2.0])
    cnn.looped = False
    bench.remeasure([cnn])
    assert (cnn.measured, cnn.settled, len(cnn.passes)) == (1.0, 0, 3) and not bench.slow_loops(cnn)


def test_a_measured_row_keeps_the_wake_up_around_its_kept_pass_a_predicted_one_the_one_before(monkeypatch):
    """The probe reads 6 µs before each pass and the wake-up after it 10 µs: a measured row keeps their mean,
    8 µs (as ``analyze --expected`` measures around its timed runs), a predicted one 6 µs (``predict`` runs
    before the program)."""
    monkeypatch.setattr(bench, "cross_core_wake", lambda: 10e-6)
    measured, predicted = _row(1.0, 1.0, [0.9], [1.0]), _row(1.0, 1.0, [0.9], [1.0])
    predicted.predicted = True
    measured.measure_again()
    predicted.measure_again()
    assert measured.measured == predicted.measured == 0.9
    assert measured.wake == pytest.approx(8e-6) and predicted.wake == pytest.approx(6e-6)
    assert measured.readings == (6e-6, 10e-6) and predicted.readings == (6e-6,)  # each is read on its own


def test_a_row_is_scored_against_its_expectation_in_the_host_state_before_its_kept_pass(capsys):
    """A scan expected at 1.0 ms, 2.0 ms with its loops as usual; calibrated wake-ups 6 µs (fastest passes) and
    10 µs (usual). Kept after a 14 µs wake-up and measured 2.9 ms: its loops at (14 − 6) / (10 − 6) = 2× their
    usual excess: 1.0 + 1.0 × 2 = 3.0 ms, 3.4% off ((3.0 − 2.9) / 2.9) where the expected time is 65.5% off
    ((2.9 − 1.0) / 2.9). Kept after a 5 µs one (quieter than calibrated) and measured 1.1 ms: 1.0 ms, 9.1%.
    A row without a usual time, or without a wake-up, is scored against its expected time."""
    wakes = (6e-6, 10e-6)
    slow = bench.Row("scan", 16, 2.9e-3, 1.0e-3, usual=2.0e-3, wake=14e-6, wakes=wakes)
    calm = bench.Row("scan", 4, 1.1e-3, 1.0e-3, usual=2.0e-3, wake=5e-6, wakes=wakes)
    plain = bench.Row("cnn", 4, 1.9e-3, 1.0e-3, wake=14e-6, wakes=wakes)
    unprobed = bench.Row("scan", 8, 1.9e-3, 1.0e-3, usual=2.0e-3, wakes=wakes)
    assert slow.error == pytest.approx(1.9 / 2.9) and slow.now == pytest.approx(3.0e-3)
    assert slow.state_error == pytest.approx(0.1 / 2.9)
    assert calm.stated == pytest.approx(1.0e-3) and calm.state_error == pytest.approx(0.1 / 1.1)
    assert plain.stated == 1.0e-3 and plain.state_error == plain.error
    assert unprobed.now is None and unprobed.state_error == unprobed.error
    # read 6 µs before its kept pass and 12 µs after: 6 µs reads 1.0 ms (under the √(6 × 10) = 7.75 µs line),
    # 12 µs a share of (12 − 6) / 4 = 1.5, 2.5 ms; their mean, 1.75 ms (the mean wake-up, 9 µs, would read a
    # share of 1, 2.0 ms: the usual state for the whole pass)
    split = bench.Row("scan", 16, 2.0e-3, 1.0e-3, usual=2.0e-3, wake=9e-6, wakes=wakes, readings=(6e-6, 12e-6))
    assert split.now == pytest.approx(1.75e-3)
    bench.summarize_states([slow, calm], [])
    out = capsys.readouterr().out
    assert "2 rows have an expected time in the host's state (÷ expected, its error): scan b16 3.00× (  3.4%)" in out
    # the two rows' state errors, 3.4% and 9.1%: median 6.3%, max 9.1%
    assert "median   6.3% (within 10%), max   9.1% (within 25%)" in out
