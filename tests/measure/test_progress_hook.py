"""benchmark()'s progress hook and the names its messages use (never a ``<locals>`` path)."""

import functools

import pytest

from neural_cost import MeasurementError, benchmark
from neural_cost.measure import display_name, reporting_progress


def test_every_warmup_and_timed_run_is_reported_in_order():
    calls = []
    with reporting_progress(lambda stage, done, total: calls.append((stage, done, total))):
        benchmark(lambda: None, warmup=2, repeats=3, clock=lambda: 0.0)
    assert calls == [("warmup", 1, 2), ("warmup", 2, 2), ("timing", 1, 3), ("timing", 2, 3), ("timing", 3, 3)]


def test_no_report_outside_the_block_and_none_for_zero_warmup():
    calls = []
    with reporting_progress(lambda *call: calls.append(call)):
        benchmark(lambda: None, warmup=0, repeats=1, clock=lambda: 0.0)
    benchmark(lambda: None, warmup=1, repeats=1, clock=lambda: 0.0)  # after the block: nobody listens
    assert calls == [("timing", 1, 1)]


def test_a_workload_keyword_named_progress_still_reaches_the_workload():
    # why a context variable and not a benchmark(progress=...) keyword: benchmark forwards **kwargs
    seen = []
    benchmark(lambda progress: seen.append(progress), warmup=0, repeats=2, progress="mine", clock=lambda: 0.0)
    assert seen == ["mine", "mine"]


def _outer():
    def inner():
        return None

    return inner


class Net:
    def __call__(self):
        return None


def test_display_name_never_shows_locals():
    assert _outer().__qualname__ == "_outer.<locals>.inner"
    assert display_name(_outer()) == "inner"
    assert (
        display_name(lambda x: x) == "<lambda>"
    )  # its qualname: test_display_name_never_shows_locals.<locals>.<lambda>
    assert display_name(Net()) == "Net"  # an object without a name: its type
    assert display_name(functools.wraps(_outer)(lambda: None)) == "_outer"  # what a wrapper wraps


def test_a_closure_of_ours_is_the_workload_in_a_timing_error():
    # Was: "benchmark: TorchAdapter.benchmark.<locals>.run raised ValueError while being timed"
    def run():
        raise ValueError("boom")

    run.__module__ = "neural_cost.adapters.torch"
    run.__qualname__ = "TorchAdapter.benchmark.<locals>.run"
    with pytest.raises(MeasurementError) as info:
        benchmark(run, warmup=0, repeats=1)
    assert str(info.value) == "benchmark: the workload raised ValueError while being timed: boom"
