"""Where the time went, in the text report: the time share of coverage, the measured line, and
the ``measured``/``eff`` cells of the tables (``analysis/timing.py`` joins the profile to the rows).

- The coverage line gains ``· time 92.3%``: the share of the measured time in kernels that runs
  no unmodeled operation (events that matched no kernel count against it), rounded down (so
  99.96% never prints as a complete 100.0%); ``≤`` when an unmodeled operation of the trace is
  carried by no kernel (its time is somewhere we cannot see).
- ``measured:`` (below it) says how much time per run was in kernels, how many kernels had events,
  the profiled runs and the profiler, the unmodeled operations ranked by their share of the kernel
  time, and the time outside every kernel (dispatch, syncs, idle gaps: never spread over rows),
  per run and as a share of the profiled run's wall time.
- Each table row gains ``measured`` (seconds per run) and ``eff`` (its bound ÷ its measured time);
  an operation that shares a fused kernel with others shows ``shared``: its measured time is the
  kernel's, split by bounds, so it has no efficiency of its own (the kernel table shows the
  kernel's). Tables stay sorted by bound.

Without a profile none of these appear; the reasons the analysis gave for having none (and the
profile's own notes) print as ``note:`` lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..analysis.suspects import percent_down
from ..core.units import format_int, format_percent, format_seconds, plural

if TYPE_CHECKING:
    from ..analysis.gap import GapReport
    from ..analysis.kernels import KernelTime
    from ..analysis.rows import RowTime
    from ..analysis.timing import TimeCoverage

#: Unmodeled operations named on the measured line, at most.
NAMED_UNMODELED = 3
#: What the tables' two extra columns are called, and the cell of a row without a figure.
MEASURED_HEADS = ("measured", "eff")
NONE = "-"


def time_figure(report: GapReport) -> str:
    """`` · time 92.3%`` for the coverage line; empty without a profile."""
    coverage = report.time_coverage
    if coverage is None:
        return ""
    fraction = coverage.fraction
    if fraction is None:
        return " · time unknown"
    return " · time " + ("≤ " if coverage.upper_bound else "") + percent_down(fraction)


def unmodeled_by_time(coverage: TimeCoverage, limit: int = NAMED_UNMODELED) -> str:
    """``sort 2.7%, custom_call foo 1.2%``: unmodeled operations by their share of the kernel time."""
    total = coverage.kernel_seconds + coverage.unmatched_seconds
    if total <= 0:
        return ""
    ranked = coverage.unmodeled[:limit]
    shown = ", ".join(f"{name} {format_percent(seconds / total)}" for name, seconds in ranked)
    return shown + (", ..." if len(coverage.unmodeled) > limit else "")


def outside_text(coverage: TimeCoverage) -> str:
    """``outside kernels 8.4 ms (12.0% of the run)``: per run, and its share of the profiled wall time."""
    share = f" ({format_percent(coverage.outside_seconds / coverage.wall_seconds)} of the run)"
    return f"outside kernels {format_seconds(coverage.outside_seconds)}" + (share if coverage.wall_seconds > 0 else "")


def measured_line(report: GapReport) -> str | None:
    """``measured: 300.0 µs per run in kernels (4 of 4 kernels had events; 2 profiled runs,
    jax.profiler) · unmodeled by time: sort 7.7% of kernel time · outside kernels 100.0 µs (25.0% of
    the run)``; None without a profile."""
    profile, coverage = report.profile, report.time_coverage
    if profile is None or coverage is None:
        return None
    kernels = len(report.estimate.kernels)
    had = sum(1 for measured in profile.kernels if measured.kernel < kernels)
    line = (
        f"measured: {format_seconds(coverage.union_seconds)} per run in kernels ({format_int(had)} of "
        f"{plural(kernels, 'kernels')} had events; {plural(profile.runs, 'profiled runs')}, {profile.source})"
    )
    if coverage.kernel_seconds > coverage.union_seconds * 1.01:
        line += (
            f" · kernels overlapped: {format_seconds(coverage.kernel_seconds)} summed, each kernel's measured time "
            "its share of the time it ran beside others"
        )
    unmodeled = unmodeled_by_time(coverage)
    if unmodeled:
        line += f" · unmodeled by time: {unmodeled} of measured time"
    if profile.unmatched:
        events = sum(c for _, _, c in profile.unmatched)
        line += (
            f" · {plural(events, 'events')} matched no kernel: {format_seconds(coverage.unmatched_seconds)}, counted "
            f"against time coverage"
        )
    if coverage.unattributed:
        line += f" · no kernel carries {', '.join(coverage.unattributed[:NAMED_UNMODELED])}: time is a ceiling"
    line += " · " + outside_text(coverage)
    return line


def note_lines(report: GapReport) -> list[str]:
    """Why there is no profile (or what it could not join), and the profile's own notes."""
    notes = list(report.profile_notes) + (list(report.profile.notes) if report.profile is not None else [])
    return [f"note: {note}" for note in notes]


def table_note(report: GapReport) -> str:
    """What the two extra columns mean, for a table's title (empty without a profile)."""
    if report.profile is None:
        return ""
    return "; measured per run, eff = bound ÷ measured"


def row_cells(row: RowTime) -> list[str]:
    """``measured`` and ``eff`` of an operation or scope row."""
    if row.measured_seconds is None:
        return [NONE, NONE]
    if row.shared:
        return [format_seconds(row.measured_seconds), "shared"]
    efficiency = row.measured_efficiency
    return [format_seconds(row.measured_seconds), NONE if efficiency is None else format_percent(efficiency)]


def kernel_cells(row: KernelTime) -> list[str]:
    """``measured`` and ``eff`` of a kernel row: each kernel's own efficiency."""
    if row.measured_seconds is None:
        return [NONE, NONE]
    efficiency = row.measured_efficiency
    return [format_seconds(row.measured_seconds), NONE if efficiency is None else format_percent(efficiency)]
