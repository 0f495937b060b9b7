"""Measured time per kernel: what a profiled pass of the program says about where time went.

An adapter's ``profile(...)`` runs the workload a few more times (``runs``) under the
framework's own profiler, after the timed runs, and joins the profiler's events to the
trace's kernels (``Trace.kernels``, by index). Conventions:

- ``MeasuredKernel.seconds`` is the union of that kernel's event intervals over all profiled
  runs (events of one kernel never count twice when they overlap); ``events`` is how many
  events it had — for a kernel executed ``executions`` times per run, ``executions × runs``.
- ``kernel_seconds`` is the union of every matched event interval (kernels running at once
  on different threads count once): the time the device spent in kernels.
- ``wall_seconds`` is the wall time of the profiled runs together; what is not in
  ``kernel_seconds`` is *outside kernels* (dispatch, host syncs, idle gaps), never spread
  over the rows.
- Events that match no kernel are listed in ``unmatched`` (name, seconds, events), never
  dropped; time coverage counts them against itself. They may lie outside every kernel (an
  unmodeled op with no kernel) or inside one (a host callback's own jitted work).
- ``events`` keeps each matched execution (start relative to the first event, duration,
  thread) for a Chrome/Perfetto trace; it may be empty when the adapter does not keep them.
- A kernel's measured time per run (``seconds_per_run``, the rows' measured column) is its
  median run's when ``events`` holds every execution of it (``run_seconds``: each event's time beside
  other kernels' events on other threads shared among them, ``overlap.shared_durations``), else its
  ``seconds`` ÷ ``runs``. On a shared machine other load stalls a run now and then (a 2-vCPU VM:
  a 6.5 ms matmul took 37 ms in one run of five); the median keeps that out of the rows, where
  a mean read it as the kernel's own 2–3× slowness. The kernel and wall times per run stay the
  runs' mean (``stalled_note`` says when the two differ).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from .errors import RecordError
from .overlap import shared_durations
from .units import format_int, format_seconds, plural

__all__ = [
    "MeasuredKernel",
    "Profile",
    "ProfileEvent",
    "count_mismatch_note",
    "runs_merged",
    "stalled_note",
    "union_seconds",
]


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise RecordError(f"{where}={value!r} must be a finite, non-negative number of seconds")
    return float(value)


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordError(f"{where}={value!r} must be a non-negative integer")
    return value


def union_seconds(intervals: Iterable[tuple[float, float]]) -> float:
    """The length of the union of ``(start, end)`` intervals."""
    total, end = 0.0, -math.inf
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


@dataclass(frozen=True, slots=True)
class MeasuredKernel:
    """One kernel's measured time over the profiled runs."""

    kernel: int  # index into Trace.kernels / CostEstimate.kernels
    seconds: float
    events: int

    def __post_init__(self) -> None:
        _count(self.kernel, "MeasuredKernel.kernel")
        object.__setattr__(self, "seconds", _seconds(self.seconds, f"MeasuredKernel {self.kernel} seconds"))
        _count(self.events, f"MeasuredKernel {self.kernel} events")

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "seconds": self.seconds, "events": self.events}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MeasuredKernel:
        return cls(data["kernel"], data["seconds"], data["events"])


@dataclass(frozen=True, slots=True)
class ProfileEvent:
    """One profiled kernel execution, for a trace viewer."""

    kernel: int
    start_seconds: float
    duration_seconds: float
    thread: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "start_seconds": self.start_seconds,
            "duration_seconds": self.duration_seconds,
            "thread": self.thread,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProfileEvent:
        return cls(data["kernel"], data["start_seconds"], data["duration_seconds"], data.get("thread", 0))


@dataclass(frozen=True, slots=True)
class Profile:
    """Where the time of ``runs`` profiled runs went, by kernel (see the module docstring)."""

    runs: int
    wall_seconds: float
    kernels: tuple[MeasuredKernel, ...]
    kernel_seconds: float
    source: str
    unmatched: tuple[tuple[str, float, int], ...] = ()
    notes: tuple[str, ...] = ()
    events: tuple[ProfileEvent, ...] = ()
    #: Kernels the profiler timed as one op (a Grappler or oneDNN fusion: a convolution with its bias add and ReLU),
    #: by kernel index: the op's events are split evenly among them; the analyses share its time among them in
    #: proportion to each one's bound, or expected time (``analysis.rows.share_fused``), so each reads the op's ratio.
    fused: tuple[tuple[int, ...], ...] = ()
    #: Each kernel's time in each run (``run_seconds``), made from ``events``.
    _by_run: dict[int, tuple[float, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.runs, bool) or not isinstance(self.runs, int) or self.runs < 1:
            raise RecordError(f"Profile.runs={self.runs!r} must be a positive integer")
        object.__setattr__(self, "wall_seconds", _seconds(self.wall_seconds, "Profile.wall_seconds"))
        object.__setattr__(self, "kernel_seconds", _seconds(self.kernel_seconds, "Profile.kernel_seconds"))
        kernels = tuple(self.kernels)
        seen: set[int] = set()
        for measured in kernels:
            if not isinstance(measured, MeasuredKernel):
                raise RecordError(f"Profile.kernels holds {measured!r}, not a MeasuredKernel")
            if measured.kernel in seen:
                raise RecordError(f"Profile.kernels lists kernel {measured.kernel} twice")
            seen.add(measured.kernel)
        object.__setattr__(self, "kernels", kernels)
        object.__setattr__(
            self,
            "unmatched",
            tuple(
                (str(n), _seconds(s, f"unmatched {n!r}"), _count(c, f"unmatched {n!r}")) for n, s, c in self.unmatched
            ),
        )
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "events", tuple(self.events))
        object.__setattr__(self, "fused", _groups(self.fused))
        if not isinstance(self.source, str) or not self.source:
            raise RecordError(f"Profile.source={self.source!r} must name the profiler")
        object.__setattr__(self, "_by_run", _by_run(kernels, self.events, self.runs))

    @property
    def outside_seconds(self) -> float:
        """Wall time of the profiled runs spent outside every kernel."""
        return max(self.wall_seconds - self.kernel_seconds, 0.0)

    def unwatched_ratio(self, unwatched_run_seconds: float) -> float:
        """How much faster a run goes unwatched than under this profiler, for its kernels: an
        unwatched run's time ÷ a profiled run's wall time (never above 1), when the kernels filled
        at least half of the profiled runs; else 1. The profiler slows what it watches (a looped
        kernel of 30 µs read 1.5× its unwatched time), but when dispatch fills the run (a 2.5 µs
        kernel in a 30 µs call) the ratio says how it slowed dispatch, not the kernels — it moved
        from 0.25 to 1.0 between profiles of one such program."""
        per_run = self.wall_seconds / self.runs
        if per_run <= 0 or unwatched_run_seconds <= 0 or self.kernel_seconds < 0.5 * self.wall_seconds:
            return 1.0
        return min(1.0, unwatched_run_seconds / per_run)

    def run_seconds(self, kernel: int) -> tuple[float, ...] | None:
        """A kernel's time in each profiled run, in run order, when the profile kept every event of it and
        as many in each run (its events in start order cut into ``runs`` equal groups, each group's
        intervals' union); None otherwise, or with one run."""
        return self._by_run.get(kernel)

    def seconds_per_run(self, kernel: int) -> float | None:
        """A kernel's measured time per run: its median run's (``run_seconds``: on a shared machine other
        load stalls a run now and then — a 6.5 ms matmul took 37 ms in one of five), else its time over
        the runs ÷ ``runs``; None when the profile has no event for it."""
        by_run = self._by_run.get(kernel)
        if by_run is not None:
            return statistics.median(by_run)
        for measured in self.kernels:
            if measured.kernel == kernel:
                return measured.seconds / self.runs
        return None

    def check_against(self, kernels: int) -> None:
        """RecordError when an entry names a kernel beyond ``kernels``."""
        for group in self.fused:
            if max(group) >= kernels:
                raise RecordError(
                    f"Profile.fused names kernel {max(group)}, but the estimate has {kernels} kernels; profile the "
                    f"trace the estimate was made from"
                )
        for measured in self.kernels:
            if measured.kernel >= kernels:
                raise RecordError(
                    f"Profile names kernel {measured.kernel}, but the estimate has {kernels} kernels; profile the "
                    f"trace the estimate was made from"
                )

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "wall_seconds": self.wall_seconds,
            "kernel_seconds": self.kernel_seconds,
            "outside_seconds": self.outside_seconds,
            "source": self.source,
            "kernels": [k.to_dict() for k in self.kernels],
            "unmatched": [list(u) for u in self.unmatched],
            "notes": list(self.notes),
            "events": [e.to_dict() for e in self.events],
            **({"fused": [list(group) for group in self.fused]} if self.fused else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Profile:
        return cls(
            runs=data["runs"],
            wall_seconds=data["wall_seconds"],
            kernels=tuple(MeasuredKernel.from_dict(k) for k in data.get("kernels", ())),
            kernel_seconds=data["kernel_seconds"],
            source=data["source"],
            unmatched=tuple((n, s, c) for n, s, c in data.get("unmatched", ())),
            notes=tuple(data.get("notes", ())),
            events=tuple(ProfileEvent.from_dict(e) for e in data.get("events", ())),
            fused=tuple(tuple(group) for group in data.get("fused", ())),
        )


def _groups(value: Any) -> tuple[tuple[int, ...], ...]:
    """``Profile.fused`` checked: groups of two or more distinct kernel indices, no kernel in two."""
    groups: list[tuple[int, ...]] = []
    seen: set[int] = set()
    for group in value:
        members = tuple(_count(k, "Profile.fused member") for k in group)
        if len(members) < 2 or len(set(members)) != len(members) or seen & set(members):
            raise RecordError(
                f"Profile.fused holds {list(members)}: each group names two or more kernels, each kernel in one group"
            )
        seen |= set(members)
        groups.append(members)
    return tuple(groups)


def _by_run(
    kernels: tuple[MeasuredKernel, ...], events: tuple[ProfileEvent, ...], runs: int
) -> dict[int, tuple[float, ...]]:
    """``Profile.run_seconds`` of every kernel it has them for: the runs go one after another, so a
    kernel's events in start order are its runs' in turn."""
    if runs < 2:
        return {}
    counts = {measured.kernel: measured.events for measured in kernels}
    shared = shared_durations([(e.start_seconds, e.duration_seconds, e.kernel, e.thread) for e in events])
    found: dict[int, list[tuple[float, float, float]]] = {}
    for event, own in zip(events, shared, strict=True):
        found.setdefault(event.kernel, []).append((event.start_seconds, event.duration_seconds, own))
    by_run: dict[int, tuple[float, ...]] = {}
    for kernel, intervals in found.items():
        if len(intervals) != counts.get(kernel) or len(intervals) % runs:
            continue
        intervals.sort()
        each = len(intervals) // runs
        by_run[kernel] = tuple(_run_time(intervals[run * each : (run + 1) * each]) for run in range(runs))
    return by_run


def _run_time(events: list[tuple[float, float, float]]) -> float:
    """One kernel's time in one run from its sorted ``(start, duration, shared)`` events: their shared
    durations summed (``overlap.shared_durations``), or, where its own events overlap one another, their union."""
    if any(start < prev + duration for (prev, duration, _), (start, _, _) in pairwise(events)):
        return _covered([(start, duration) for start, duration, _ in events])
    return sum(own for *_, own in events)


def _covered(events: list[tuple[float, float]]) -> float:
    """The union of sorted ``(start, duration)`` events: their durations summed where they do not overlap
    (exactly what the profiler said, no start subtracted from an end)."""
    total, end = 0.0, -math.inf
    for start, duration in events:
        stop = start + duration
        if stop <= end:
            continue
        total += duration if start >= end else stop - end
        end = stop
    return total


_PER_RUN = re.compile(r"^profiled run (\d+): (.*)$", re.DOTALL)


def runs_merged(notes: Iterable[str]) -> tuple[str, ...]:
    """``notes`` once each, those said of one profiled run merged across the runs that said the
    same: ``profiled run 1: X``, ``profiled run 2: X``, ``profiled run 3: X`` are ``profiled runs
    1–3: X`` (``runs 1, 3`` when not consecutive), placed where the first stood."""
    runs: dict[tuple[bool, str], list[int]] = {}  # (said of a run, what): the runs that said it
    for note in notes:
        found = _PER_RUN.match(note)
        at = runs.setdefault((True, found.group(2)) if found else (False, note), [])
        if found and int(found.group(1)) not in at:
            at.append(int(found.group(1)))
    merged: list[str] = []
    for (of_run, said), at in runs.items():
        at.sort()
        if not of_run:
            merged.append(said)
        elif len(at) == 1:
            merged.append(f"profiled run {at[0]}: {said}")
        else:
            consecutive = at == list(range(at[0], at[-1] + 1))
            which = f"{at[0]}–{at[-1]}" if consecutive else ", ".join(map(str, at))
            merged.append(f"profiled runs {which}: {said}")
    return tuple(merged)


def count_mismatch_note(differ: Iterable[tuple[str, float, int]], *, groups: int = 3, names: int = 2) -> str:
    """The note on kernels whose profiled executions differ from the trace's: ``differ`` is
    (kernel, executions per run seen, executions counted). Kernels with the same pair are one
    group — a loop body's kernels move together, so "61 ran 65 times a run where 256 were
    counted" shows a loop's real trip count where a list of names did not — the groups that
    missed or added the most executions first, ``groups`` of them, each naming ``names`` kernels."""
    together: dict[tuple[float, int], list[str]] = {}
    for name, seen, counted in differ:
        together.setdefault((seen, counted), []).append(name)
    order = sorted(together.items(), key=lambda item: -abs(item[0][0] - item[0][1]) * len(item[1]))
    said = []
    for (seen, counted), kernels in order[:groups]:
        listed = ", ".join(kernels[:names]) + (f" and {len(kernels) - names} more" if len(kernels) > names else "")
        said.append(f"{len(kernels)} ran {seen:g} times a run where {counted} were counted ({listed})")
    if len(order) > groups:
        said.append(f"{len(order) - groups} more group(s) of other counts")
    total = sum(len(kernels) for kernels in together.values())
    return (
        f"{total} kernel(s) ran a different number of times than the trace counts: {'; '.join(said)} — a loop's "
        f"trip count or a conditional's branch differs from what the estimate assumed"
    )


#: A kernel whose slowest profiled run took this multiple of its median run's or more had a stalled run.
STALLED_RUN = 1.5
#: ... when the excess was at least this share of a run's kernel time (a 2 µs kernel at 4 µs once is noise).
_STALL_SHARE = 0.01


def stalled_note(profile: Profile, names: Sequence[str], *, named: int = 2) -> str | None:
    """The note on kernels whose slowest profiled run took ``STALLED_RUN`` × their median run or more,
    by at least ``_STALL_SHARE`` of a run's kernel time (``names``: the kernels' names, by index),
    the largest excess first, ``named`` of them by name: the measured column is each one's median
    run, while the kernel and wall times per run are the runs' mean. None when there are none."""
    per_run = profile.kernel_seconds / profile.runs
    stalled = []
    for kernel, by_run in profile._by_run.items():
        median, slowest = statistics.median(by_run), max(by_run)
        if slowest >= STALLED_RUN * median and slowest - median >= _STALL_SHARE * per_run:
            stalled.append((slowest - median, kernel, median, slowest))
    if not stalled:
        return None
    stalled.sort(reverse=True)
    said = ", ".join(
        f"{names[kernel] if kernel < len(names) else f'kernel {kernel}'} {format_seconds(slowest)} in its slowest "
        f"run, {format_seconds(median)} in its median one"
        for _, kernel, median, slowest in stalled[:named]
    )
    more = f" and {plural(len(stalled) - named, 'more kernels')}" if len(stalled) > named else ""
    return (
        f"a profiled run stalled: {said}{more} (of {profile.runs} runs; other load on a shared machine?) — the "
        f"measured column is each kernel's median run; the time per run in kernels and outside them, the runs' mean"
    )


#: Kernel time under the profiler, per run, beyond this multiple of the timed run's: a note says
#: the measured column is the profiler's view.
SLOWED_BY_PROFILER = 1.5
#: The most a profiler's event could cost (measured: 0.2–0.75 µs), to tell a profiler's slowing from a slower machine.
_EVENT_COST = 2e-6


def slowed_note(profile: Profile, run_seconds: float) -> str | None:
    """The note on a profile whose kernels alone took longer a run than the whole timed run did:
    a profiler's events cost a few tenths of a µs each (``jax.profiler`` on a 2-core VM: 0.2–0.4
    µs), and a loop of tiny kernels runs thousands a run (a gymnax rollout: 94,484 events a run,
    74.8 ms of kernels profiled against a 3.6 ms run: 0.75 µs an event). When the excess is more
    than ``_EVENT_COST`` an event could make (LLaMA's 93 kernels at 46 ms a run against a 17 ms
    timed run: its lm_head matmul ran 37 ms in every profiled run, 6.5 ms in the timed ones), the
    machine was slower while the profiler ran, or the profiler slowed the kernels themselves (a
    TensorFlow CNN's 14 kernels read 1.43× the timed run). None when the kernels took no longer."""
    kernel = profile.kernel_seconds / profile.runs
    if run_seconds <= 0 or kernel <= SLOWED_BY_PROFILER * run_seconds:
        return None
    events = sum(measured.events for measured in profile.kernels) / profile.runs
    took = (
        f"its kernels took {format_seconds(kernel)} a run under the profiler, the whole timed run "
        f"{format_seconds(run_seconds)} ({kernel / run_seconds:.1f}×), over {format_int(round(events))} kernel "
        f"events a run"
    )
    if kernel - run_seconds > events * _EVENT_COST:
        return (
            f"the profiled runs ran slower than the timed ones: {took}, more than a profiler's cost per event adds "
            f"(≤ {_EVENT_COST * 1e6:g} µs each) — the machine ran slower while they ran (other load?), or the profiler "
            f"slowed the kernels themselves; the measured column is of those runs, the expected time and the observed "
            f"run are not"
        )
    return (
        f"the profiler slowed this program: {took} — its cost per event, not the kernels' work, fills the measured "
        f"column; the expected time and the observed run are not the profiler's"
    )
