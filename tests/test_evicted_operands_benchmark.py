"""The evicted-operands benchmark's before (``benchmarks/evicted_operands.py``): the same trace with no kernel
saying how far back its memory was in use scores as the expected time did before evicted operands."""

import pytest

from neural_cost import Coverage, Trace, estimate_trace
from neural_cost.analysis.expected import expected_time
from neural_cost.hardware.kernel_model import KernelCalibration
from tests.analysis.test_evicted_operands import OPS, SPEC, _expected, _kernels
from tests.helpers import load_benchmark

pytest.importorskip("torch")


def test_without_reuse_is_the_expected_time_before_evicted_operands():
    """``test_evicted_operands``'s four kernels, their reuse taken out: every row as with none given (add 1.572864
    µs, not 6.815744), and nothing else of the estimate moves."""
    bench = load_benchmark("evicted_operands.py", "evicted_operands_benchmark")
    estimate = estimate_trace(Trace(OPS, Coverage.full(OPS), kernels=_kernels(True), framework="torch"))
    plain = bench.without_reuse(estimate)
    assert all(kernel.reuse == () for kernel in plain.kernels)
    assert plain.kernels == estimate_trace(Trace(OPS, Coverage.full(OPS), kernels=_kernels(False))).kernels
    assert plain.by_operation == estimate.by_operation
    calibration = KernelCalibration("torch", SPEC, {}, machine={}, date="2026-12-05")
    rows = {row.name: row.seconds for row in expected_time(plain, calibration, machine={}).rows}
    assert rows == {row.name: row.seconds for row in _expected(False).rows}
    assert rows["add"] == pytest.approx(1.572864e-6)


def test_two_readings_of_the_same_kernels_are_summarized_side_by_side(capsys):
    """Two kernels of 1 s and 3 s profiled, read at 2.0× and 1.0× by the first model and 1.0× and 0.5× by the
    second: |log| medians (ln 2 + 0) / 2 = 0.347 both (×1.41); time-weighted |× − 1|: (1·1 + 0·3) / 4 = 25.0% and
    (0·1 + 0.5·3) / 4 = 37.5%. A run naming a model of another framework is refused, naming those it may."""
    heldout = load_benchmark("heldout_models.py", "heldout_models_for_summary")
    heldout.compare_runs("gpt2:4", lambda name, batch: [(2.0, 1.0, 1.0), (1.0, 0.5, 3.0)], ("one", "other"), "kernels")
    out = capsys.readouterr().out.splitlines()
    tail = "median |log(expected ÷ profiled)| 0.347 (×1.41), time-weighted |expected ÷ profiled − 1|"
    assert out == [f"2 kernels, one  : {tail} 25.0%", f"2 kernels, other: {tail} 37.5%"]
    heldout.compare_runs("flax_cnn:4", lambda name, batch: [], ("a", "b"), "kernels", framework="torch")
    assert capsys.readouterr().out.startswith("flax_cnn:4: not MODEL:BATCH with a model of gpt2, bert, llama")
