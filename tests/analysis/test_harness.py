"""A wall-timed calibration point less its timing harness's own time (``analysis/harness.py``).

By hand: a harness of 6.9 µs a run takes a 9.5 µs point to 2.6 µs; a 5 µs point (under the harness: a stall when
the harness was timed) keeps NET_SHARE (a quarter) of it, 1.25 µs.
"""

from __future__ import annotations

from typing import Any

import pytest

from neural_cost.adapters.base import FrameworkAdapter, MicroProgram
from neural_cost.analysis import harness
from neural_cost.measure.timing import Measurement


def test_a_point_is_its_wall_less_the_harness_and_never_below_a_quarter_of_it():
    assert harness.NET_SHARE == 0.25
    assert harness.net(9.5e-6, 6.9e-6) == pytest.approx(2.6e-6)
    assert harness.net(5e-6, 6.9e-6) == pytest.approx(1.25e-6)
    assert harness.net(1e-3, 0.0) == 1e-3  # an adapter without a harness program: the wall as it is


class _Timed(FrameworkAdapter):
    """A wall-timed adapter whose runs take what its programs say: the harness 7 µs, an op 10 µs."""

    framework = "hand"
    kernel_timing = "wall"

    def __init__(self) -> None:
        self.harness_runs = 0
        self.empty, self.op = (lambda: None), (lambda: None)

    def harness_program(self) -> MicroProgram | None:
        return MicroProgram("harness", self.empty)

    def benchmark(self, model: Any, *args: Any, warmup: int = 10, repeats: int = 30, **options: Any) -> Measurement:
        self.harness_runs += model is self.empty
        return Measurement(samples_seconds=((7e-6 if model is self.empty else 10e-6),) * repeats)


class _Bare(_Timed):
    def harness_program(self) -> MicroProgram | None:
        return None


def test_the_harness_is_timed_once_a_process_the_smallest_of_its_passes(monkeypatch):
    """Its empty program's median (7 µs) over PASSES (3) timings, once for each adapter type; an adapter without
    a harness program (a profiled one's default) costs nothing."""
    monkeypatch.setattr(harness, "_measured", {})
    adapter = _Timed()
    assert harness.harness_seconds(adapter) == pytest.approx(7e-6)
    assert harness.harness_seconds(adapter) == pytest.approx(7e-6)
    assert adapter.harness_runs == harness.PASSES == 3  # measured once, not again
    assert harness.harness_seconds(_Bare()) == 0.0
    assert FrameworkAdapter.harness_program(adapter) is None  # the contract's default


def test_a_wall_timed_pass_keeps_each_wall_less_the_harness(monkeypatch):
    """One pass of the op's program (10 µs a run) through ``_time_once``: its kept time is 10 − 7 = 3 µs."""
    from neural_cost.analysis import calibrate_kernels as ck

    monkeypatch.setattr(harness, "_measured", {})
    adapter = _Timed()
    kept: list[float] = []

    class _Prepared:
        program = MicroProgram("op", adapter.op)
        repeats = 5

        def keep(self, kernel: Any, seconds: float) -> None:
            kept.append(seconds)

    monkeypatch.setattr(ck, "looped", lambda prepared: False)
    ck._time_once(adapter, _Prepared())  # type: ignore[arg-type]
    assert kept == [pytest.approx(3e-6)]
