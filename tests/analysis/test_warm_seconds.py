"""Untimed runs by time before the timed ones (``time_workload(warm_seconds=)``).

Measured on this shared 2-core VM: after 3 s idle a Keras CNN's first medians of 20 runs read
3.5–4.7 ms, and 2.1–2.5 ms after half a second of runs (the idle core's threads coming back); a
count of warm-up runs says nothing of how long that took. The framework floor, whose passes sit
a second apart, warms each pass."""

from __future__ import annotations

import time

import pytest

from neural_cost.analysis.workload import time_workload


def _recorded(seconds: float):
    starts: list[float] = []

    def fn() -> None:
        starts.append(time.perf_counter())
        time.sleep(seconds)

    return fn, starts


def test_the_timed_runs_start_after_warm_seconds_of_untimed_ones():
    """A 5 ms call, 60 ms of warming: the harness runs the 2 counted warm-ups, then untimed runs
    until 60 ms have passed since the first, then the 3 timed runs — inside the adapter's or the
    plain harness, after anything it compiled."""
    fn, starts = _recorded(0.005)
    measured = time_workload(None, fn, warmup=2, repeats=3, warm_seconds=0.06)
    assert measured.runs == 3 and len(measured.warmup_seconds) == 2  # the untimed runs are neither
    assert len(starts) >= 2 + 3 + 1
    assert starts[-3] - starts[0] >= 0.06


@pytest.mark.parametrize("warm", [0.0, -1.0])
def test_no_warm_seconds_runs_only_the_counted_warm_ups(warm):
    fn, starts = _recorded(0.0)
    time_workload(None, fn, warmup=2, repeats=3, warm_seconds=warm)
    assert len(starts) == 5


def test_keep_warm_runs_until_the_warming_seconds_have_passed():
    """``keep_warm`` (before a profiler starts) runs nothing outside ``warming``, and inside it runs
    until the seconds have passed: under 30 ms of warming, 5 ms calls run while less than 30 ms has
    passed since the first began (so every call started inside the 30 ms), and not one more; the
    last ends at or after the 30 ms. Counted by starts, not by 30 / 5: on a busy host a 5 ms sleep
    takes 7 ms (a CI run counted 5 calls)."""
    from neural_cost.measure.timing import keep_warm, warming

    fn, starts = _recorded(0.005)
    assert keep_warm(fn) == 0 and starts == []
    began = time.perf_counter()
    with warming(0.03):
        count = keep_warm(fn)
    ended = time.perf_counter()
    assert count == len(starts) >= 2  # a 5 ms call cannot fill 30 ms alone
    assert starts[-1] - starts[0] < 0.03 and ended - began >= 0.03


def test_the_profiled_runs_are_warmed_as_the_timed_ones():
    """PyTorch: ``profile_workload(warm_seconds=)`` (what ``analyze_workload`` passes on) runs the
    model that long just before its profiled runs: an idle core's threads otherwise stall the first
    kernels of the first profiled run. Counted by the model's calls: 0.2 s of a ≥ 1 ms forward is
    at most 200 more calls and, sleeping about 1.1 ms each, well over 100."""
    torch = pytest.importorskip("torch")
    from neural_cost.adapters import TorchAdapter
    from neural_cost.analysis.workload import profile_workload

    calls: list[float] = []

    class Slow(torch.nn.Module):
        def forward(self, x):
            calls.append(time.perf_counter())
            time.sleep(0.001)
            return x * 2

    adapter, model, args = TorchAdapter(), Slow(), (torch.ones(4),)
    trace = adapter.trace(model, args)

    def profiled_calls(warm: float) -> int:
        calls.clear()
        profile, notes = profile_workload(adapter, model, args, {}, trace, None, 2, warm)
        assert profile is not None, notes
        return len(calls)

    cold, warmed = profiled_calls(0.0), profiled_calls(0.2)
    assert 100 <= warmed - cold <= 200
