"""Where the time went: a profiled pass's measured time per kernel, joined to the rows.

- A kernel row's measured time is its profiled time per run (``Profile.seconds_per_run``).
- A record's measured time is its kernel's, split over the kernel's records in proportion to
  their own bounds (max(compute, memory) at the spec's main-memory bandwidth, as the
  per-operation table scores them; equally when every bound is zero). A record that shares
  its kernel with others is marked *shared*: it has no efficiency of its own.
- A scope's measured time is the sum of its records'.
- Time coverage is the share of the time in kernels that runs no unmodeled operation; the
  time outside every kernel (dispatch, syncs, gaps) is reported beside it, never spread.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.estimate import CostEstimate
from ..core.profile import Profile
from ..costs.estimate import scope_of
from .kernels import KernelTime
from .rows import RowTime


@dataclass(frozen=True, slots=True)
class TimeCoverage:
    """Time in modeled kernels over time in all kernels, per run; with the unmodeled ranked."""

    modeled_seconds: float
    kernel_seconds: float
    #: ``(unmodeled operation, seconds per run)``, most time first.
    unmodeled: tuple[tuple[str, float], ...]
    outside_seconds: float
    wall_seconds: float

    @property
    def fraction(self) -> float | None:
        return self.modeled_seconds / self.kernel_seconds if self.kernel_seconds > 0 else None


def kernel_rows_with_time(rows: tuple[KernelTime, ...], profile: Profile) -> tuple[KernelTime, ...]:
    events = {m.kernel: m.events for m in profile.kernels}
    return tuple(
        replace(row, measured_seconds=profile.seconds_per_run(row.index), events=events.get(row.index, 0))
        if row.index is not None
        else row
        for row in rows
    )


def record_times(estimate: CostEstimate, rows: tuple[RowTime, ...], profile: Profile) -> dict[int, tuple[float, bool]]:
    """``{record index: (measured seconds per run, shared)}`` for every record in a profiled kernel."""
    bounds = {row.index: row.bound_seconds for row in rows if row.index is not None}
    result: dict[int, tuple[float, bool]] = {}
    for index, kernel in enumerate(estimate.kernels):
        measured = profile.seconds_per_run(index)
        if measured is None or not kernel.operations:
            continue
        weights = [bounds.get(i, 0.0) for i in kernel.operations]
        total = sum(weights)
        shared = len(kernel.operations) > 1
        for record, weight in zip(kernel.operations, weights, strict=True):
            part = weight / total if total > 0 else 1 / len(kernel.operations)
            result[record] = (measured * part, shared)
    return result


def operation_rows_with_time(rows: tuple[RowTime, ...], times: dict[int, tuple[float, bool]]) -> tuple[RowTime, ...]:
    return tuple(
        replace(row, measured_seconds=times[row.index][0], shared=times[row.index][1])
        if row.index is not None and row.index in times
        else row
        for row in rows
    )


def scope_rows_with_time(
    estimate: CostEstimate, rows: tuple[RowTime, ...], times: dict[int, tuple[float, bool]]
) -> tuple[RowTime, ...]:
    by_scope: dict[str, float] = {}
    for index, (seconds, _shared) in times.items():
        scope = scope_of(estimate.by_operation[index])
        by_scope[scope] = by_scope.get(scope, 0.0) + seconds
    return tuple(replace(row, measured_seconds=by_scope[row.name]) if row.name in by_scope else row for row in rows)


def time_coverage(estimate: CostEstimate, profile: Profile) -> TimeCoverage:
    modeled = total = 0.0
    unmodeled: dict[str, float] = {}
    for measured in profile.kernels:
        seconds = measured.seconds / profile.runs
        total += seconds
        names = estimate.kernels[measured.kernel].unmodeled
        if names:
            for name in names:
                unmodeled[name] = unmodeled.get(name, 0.0) + seconds / len(names)
        else:
            modeled += seconds
    ranked = tuple(sorted(unmodeled.items(), key=lambda item: -item[1]))
    return TimeCoverage(
        modeled, total, ranked, profile.outside_seconds / profile.runs, profile.wall_seconds / profile.runs
    )
