"""Where the time went: a profiled pass's measured time per kernel, joined to the rows.

- A kernel row's measured time is its profiled time per run (``Profile.seconds_per_run``: its
  median profiled run's, when the profile kept its events).
- A record's measured time is its kernel's, split over the kernel's records in proportion to
  their own bounds (max(compute, memory) at the spec's main-memory bandwidth, as the
  per-operation table scores them; equally when every bound is zero). A record that shares
  its kernel with others is marked *shared*: it has no efficiency of its own.
- A scope's measured time is the sum of its records'.
- Time coverage is the time in kernels that run no unmodeled operation over the time in all
  kernels *plus* the time of events that matched no kernel (those are work we cannot vouch
  for: an unmodeled op with no kernel of its own lands there). When an unmodeled operation
  of the trace is carried by no kernel, its time may hide anywhere: the figure is then an
  upper bound (``upper_bound``), printed with ``≤``. The time outside every kernel (dispatch,
  syncs, gaps) is reported beside it, never spread over the rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.estimate import CostEstimate
from ..core.profile import Profile
from ..costs.estimate import scope_of
from .kernels import KernelTime
from .rows import RowTime, share_fused, split_by_bounds


@dataclass(frozen=True, slots=True)
class TimeCoverage:
    """Time in modeled kernels over time in all kernels, per run; with the unmodeled ranked."""

    modeled_seconds: float
    #: Each kernel's time per run, summed (kernels that overlap count each).
    kernel_seconds: float
    #: ``(unmodeled operation, seconds per run)``, most time first; events that matched no kernel
    #: are listed as ``unmatched <name>``.
    unmodeled: tuple[tuple[str, float], ...]
    outside_seconds: float
    wall_seconds: float
    #: Time per run in kernels with overlaps counted once: ``wall − outside``.
    union_seconds: float = 0.0
    #: Time per run of events that matched no kernel (part of the denominator).
    unmatched_seconds: float = 0.0
    #: Unmodeled operations of the trace that no kernel carries: their time is somewhere unknown.
    unattributed: tuple[str, ...] = ()

    @property
    def fraction(self) -> float | None:
        total = self.kernel_seconds + self.unmatched_seconds
        return self.modeled_seconds / total if total > 0 else None

    @property
    def upper_bound(self) -> bool:
        """The fraction is a ceiling: some unmodeled operation's time could not be found."""
        return bool(self.unattributed)


def kernel_rows_with_time(rows: tuple[KernelTime, ...], profile: Profile) -> tuple[KernelTime, ...]:
    """The kernel rows with their measured time per run; kernels the profiler timed as one op (``Profile.fused``)
    share its time in proportion to their bounds."""
    events = {m.kernel: m.events for m in profile.kernels}
    measured = {
        row.index: seconds
        for row in rows
        if row.index is not None and (seconds := profile.seconds_per_run(row.index)) is not None
    }
    measured = share_fused(
        measured, profile.fused, {row.index: row.bound_seconds for row in rows if row.index is not None}
    )
    return tuple(
        replace(row, measured_seconds=measured.get(row.index), events=events.get(row.index, 0))
        if row.index is not None
        else row
        for row in rows
    )


#: ``{record index: (measured seconds per run, shared, kernel bound behind that time)}``.
RecordTimes = dict[int, tuple[float, bool, float]]


def record_times(estimate: CostEstimate, rows: tuple[RowTime, ...], kernels: tuple[KernelTime, ...]) -> RecordTimes:
    """Every record in a profiled kernel (``kernels``: the rows with their measured time): its share of the
    kernel's measured time and of the kernel's bound, split alike (in proportion to the records' own bounds)."""
    bounds = {row.index: row.bound_seconds for row in rows if row.index is not None}
    kernel_bounds = {row.index: row.bound_seconds for row in kernels if row.index is not None}
    times = {row.index: row.measured_seconds for row in kernels if row.index is not None}
    result: RecordTimes = {}
    for index, kernel in enumerate(estimate.kernels):
        measured = times.get(index)
        if measured is None or not kernel.operations:
            continue
        shared = len(kernel.operations) > 1
        for record, part in split_by_bounds(kernel.operations, bounds):
            result[record] = (measured * part, shared, kernel_bounds.get(index, 0.0) * part)
    return result


def operation_rows_with_time(rows: tuple[RowTime, ...], times: RecordTimes) -> tuple[RowTime, ...]:
    return tuple(
        replace(
            row,
            measured_seconds=times[row.index][0],
            shared=times[row.index][1],
            measured_bound_seconds=times[row.index][2],
        )
        if row.index is not None and row.index in times
        else row
        for row in rows
    )


def scope_rows_with_time(estimate: CostEstimate, rows: tuple[RowTime, ...], times: RecordTimes) -> tuple[RowTime, ...]:
    """A scope's measured time is its records'; its efficiency the kernel bounds behind that time over it."""
    by_scope: dict[str, tuple[float, float]] = {}
    for index, (seconds, _shared, bound) in times.items():
        scope = scope_of(estimate.by_operation[index])
        before = by_scope.get(scope, (0.0, 0.0))
        by_scope[scope] = (before[0] + seconds, before[1] + bound)
    return tuple(
        replace(row, measured_seconds=by_scope[row.name][0], measured_bound_seconds=by_scope[row.name][1])
        if row.name in by_scope
        else row
        for row in rows
    )


def time_coverage(estimate: CostEstimate, profile: Profile) -> TimeCoverage:
    modeled = total = 0.0
    unmodeled: dict[str, float] = {}
    carried: set[str] = set()
    for kernel in estimate.kernels:
        carried.update(kernel.unmodeled)
    for measured in profile.kernels:
        seconds = measured.seconds / profile.runs
        total += seconds
        names = estimate.kernels[measured.kernel].unmodeled
        if names:
            for name in names:
                unmodeled[name] = unmodeled.get(name, 0.0) + seconds / len(names)
        else:
            modeled += seconds
    unmatched = 0.0
    for name, seconds, _events in profile.unmatched:
        unmatched += seconds / profile.runs
        key = f"unmatched {name}"
        unmodeled[key] = unmodeled.get(key, 0.0) + seconds / profile.runs
    ranked = tuple(sorted(unmodeled.items(), key=lambda item: -item[1]))
    missing = tuple(name for name, _count in estimate.coverage.unmodeled if name not in carried)
    return TimeCoverage(
        modeled,
        total,
        ranked,
        profile.outside_seconds / profile.runs,
        profile.wall_seconds / profile.runs,
        profile.kernel_seconds / profile.runs,
        unmatched,
        missing,
    )
