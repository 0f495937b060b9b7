"""A wall-timed calibration point less what its timing harness costs (``FrameworkAdapter.harness_program``).

PyTorch's points are timed by their wall, one call of a wrapped op per timed run: the run pays the harness (the
timer, the wait on the result, the wrapper that turns gradients off) once, and a model's ops, one after another
inside one call, do not. On a 2-core AMD EPYC VM that harness cost 6.9 µs a run: a relu of 1,000 floats read
9.5 µs as a point, 1.7 µs an op in a chain of 100 relus timed as one program (docs/expected.md, runs HA–HD), so
every small eager op was expected about 7 µs too slow, which a framework floor cancels between batches but a
program without one does not (a PyTorch GRU at batch 1, 389 eager ops: expected 12.0 ms, ran 7.3 ms).

``harness_seconds`` times the adapter's empty program through the same harness (the smallest of ``PASSES``
medians, as the points are), once a process; ``net`` takes it off a point's wall, never below ``NET_SHARE`` of it
(a harness figure measured in a stall cannot make a point free).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .workload import time_workload

if TYPE_CHECKING:
    from ..adapters.base import FrameworkAdapter

PASSES, REPEATS = 3, 200
#: The least share of its wall a point keeps.
NET_SHARE = 0.25
_measured: dict[type, float] = {}


def harness_seconds(adapter: FrameworkAdapter) -> float:
    """What one timed run of the adapter's empty program takes (0 for an adapter without one), measured once a
    process for each adapter type."""
    program = adapter.harness_program()
    if program is None:
        return 0.0
    key = type(adapter)
    if key not in _measured:
        runs = [time_workload(adapter, program.fn, program.args, program.kwargs, warmup=20, repeats=REPEATS)
                for _ in range(PASSES)]  # fmt: skip
        _measured[key] = min(run.median_seconds for run in runs)
    return _measured[key]


def net(seconds: float, harness: float) -> float:
    """A wall less the harness's time, at least ``NET_SHARE`` of it."""
    return max(seconds - harness, seconds * NET_SHARE)
