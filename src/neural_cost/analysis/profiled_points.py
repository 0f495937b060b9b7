"""A kernel calibration's measured programs and the points of a profiled one (``calibrate_kernels``).

A compiled framework's program is profiled: each kernel's time per run is read off its events
(``_per_run``), scaled by the program's wall time unwatched ÷ its wall time under the profiler
(``Profile.unwatched_ratio``), and refused where the events cannot be the kernels' work. A loop's
kernels are read otherwise (``_loop_times``): under ``jax.profiler`` an event costs 0.2–0.4 µs,
while a loop body's kernels take tens of ns — a gymnax CartPole step runs some 470 kernels in 11
µs — so the loop takes its own time from two wall times (the program and its twin at fewer trips,
``MicroProgram.shorter``), and its kernels share it as their events less the profiler's cost per
event (``profiler_cost``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..core.errors import NeuralCostError
from ..hardware.kernel_model import KernelCalibration, Point
from .kernel_classes import Part, class_model, kernel_class, one_part, parts

if TYPE_CHECKING:
    from ..adapters.base import MicroProgram
    from ..core.estimate import CostEstimate
    from ..core.profile import Profile
    from ..core.records import Trace
    from ..hardware.spec import HardwareSpec
    from .kernels import KernelTime


@dataclass(frozen=True, slots=True)
class _Pending:
    """A wall-timed program of several kernels: its main kernel's time is the program's less what
    the first fit expects of the others (``_resolve``)."""

    program: str
    #: The main kernel and the others as the expected time reads them (``kernel_classes.parts``).
    main: Part
    others: tuple[Part, ...]
    seconds: float
    #: The program's usual time, where its main kernel is a loop's (``wall_points.usual_of``).
    usual_seconds: float | None = None
    #: A recurrent layer's steps' own time, without its cost per call (``wall_points.per_call``), and its weights.
    steps_seconds: float | None = None
    call_bytes: int | None = None


#: A profiled program of 2 ms a run or more, whose kernel events would cost the profiler at most 1% of a run at
#: 1 µs each (``jax.profiler``'s measured 0.2–0.43 µs an event, ``profiler_cost``), takes no unwatched wall time:
#: the profiler's slowdown of it is below what a pass can tell, and the ratio read noise instead. On a 2-core VM
#: (2026-12-07) 209 JAX programs of 2 ms or more read their three passes' ratios at a median 0.991, a tenth under
#: 0.89 (one 19 ms gradient convolution 0.57, then 0.53–1.0 over six passes: a ratio is capped at 1, so noise only
#: ever sped a point up), and their walls took about a quarter of a JAX calibration. TensorFlow's read as noisy: eight
#: such convolutions, products and a batch norm (2–52 ms) read medians of 0.946–1.000 over six passes.
WATCHED_ALONE, EVENT_COST, PROFILER_SHARE = 2e-3, 1e-6, 0.01


@dataclass
class _Prepared:
    """One micro-program traced and scored, and its best time so far: per kernel index for a
    profiled program, under the key None for a wall-timed one."""

    program: MicroProgram
    estimate: CostEstimate
    scored: tuple[KernelTime, ...]
    repeats: int
    trace: Trace
    hardware: HardwareSpec
    best: dict[int | None, float] = field(default_factory=dict)
    fused: bool = False
    #: Per profiled pass: the run's wall time unwatched ÷ its wall time under the profiler (≤ 1).
    unwatched: list[float] = field(default_factory=list)
    #: A loop program's unwatched wall times, its own and its shorter twin's (``MicroProgram.trips``).
    walls: list[float] = field(default_factory=list)
    short_walls: list[float] = field(default_factory=list)
    #: A recurrent layer's wall times at fewer steps (``MicroProgram.fewer_steps``), each just after a pass's wall.
    fewer_walls: list[float] = field(default_factory=list)
    #: A loop program's host cross-core wake-up (``hardware.wake``) just before each pass's wall (None: not measured).
    wakes: list[float | None] = field(default_factory=list)
    #: The wall time of the one run (after a warmup run) its ``repeats`` were counted from.
    first_run: float = math.nan

    def unwatched_ratio(self) -> float:
        """The median of the passes' ratios (1 without any): applied to the smallest raw kernel
        time, so that a stall in one pass neither slows a kernel nor, through its ratio, speeds it."""
        return statistics.median(self.unwatched) if self.unwatched else 1.0

    @property
    def watched_alone(self) -> bool:
        """Whether the program is profiled without an unwatched wall time of its own (its ratio 1): a program
        without a loop whose first run took ``WATCHED_ALONE`` or more, whose kernel executions a run cost the
        profiler at most ``PROFILER_SHARE`` of it at ``EVENT_COST`` each."""
        events = sum(row.executions for row in self.scored if row.index is not None)
        return (
            self.program.shorter is None
            and self.first_run >= WATCHED_ALONE
            and events * EVENT_COST <= PROFILER_SHARE * self.first_run
        )

    def keep(self, key: int | None, seconds: float) -> None:
        self.best[key] = min(seconds, self.best.get(key, seconds))


#: A kernel measured under these fractions of its roofline compute and memory times did not run
#: the work its records describe (its events span a launch only, or its records ran in another
#: kernel). The compute peak is the chip's own; a measured bandwidth can be below what a kernel
#: that only streams reads gets, so the memory side has more room.
_BELOW_COMPUTE, _BELOW_MEMORY = 0.5, 0.25
#: Kernels that run none of the program's records taking this share of its kernel time: its
#: records were joined to kernels other than those that ran them.
_UNJOINED_SHARE = 0.5
#: Classes of record-less kernels that are points of their own (and no sign of records joined elsewhere): XLA:CPU's
#: expansion of a max pool's backward, a reduce-window of several arrays (``core.kernels.VARIADIC_WINDOW``), whose
#: record the scatter-add after it holds.
RECORDLESS_POINTS = frozenset({"pool_backward"})


def _per_run(profile: Profile, kernel: int, executions: int) -> float | None:
    """A kernel's profiled seconds per run: its executions times the median of its events'
    durations (a stall in one run moves it little), when the profile kept one event per
    execution; else the union of its events over the runs (``Profile.seconds_per_run``)."""
    durations = sorted(event.duration_seconds for event in profile.events if event.kernel == kernel)
    if executions < 1 or len(durations) != executions * profile.runs:
        return profile.seconds_per_run(kernel)
    mid = len(durations) // 2
    median = durations[mid] if len(durations) % 2 else (durations[mid - 1] + durations[mid]) / 2
    return executions * median


def _fused(profile: Profile, kernels: set[int]) -> bool:
    """Whether the profiler timed some of ``kernels`` as one op: the profile says so (``Profile.fused``), or a fused
    op's event split evenly over the kernels it ran (``_tf/profile.py``) shows, two of them with events of equal
    length back to back on one thread — which kernels timed apart never have."""

    if any(kernels.intersection(group) for group in profile.fused):  # an adapter that says so (TensorFlow's)
        return True

    def key(thread: int, at: float, length: float) -> tuple[int, int, int]:
        return thread, round(at * 1e12), round(length * 1e12)  # picoseconds

    events = [event for event in profile.events if event.kernel in kernels]
    ends = {key(e.thread, e.start_seconds + e.duration_seconds, e.duration_seconds): e.kernel for e in events}
    return any(ends.get(key(e.thread, e.start_seconds, e.duration_seconds), e.kernel) != e.kernel for e in events)


#: A loop kernel's own time is at least this share of its profiled time: its events less the
#: profiler's cost per event would leave nothing of one whose events are all cost.
_LOOP_FLOOR_SHARE = 0.1


def _loop(prepared: _Prepared) -> tuple[float, dict[int, float], int] | None:
    """A loop program's loop time per run, profiler-free (``MicroProgram.shorter``: its wall
    time less its shorter twin's, the smallest of the passes each, per trip, times its trips), its
    loop kernels' (those run more than once) profiled seconds per run, and their events per run;
    None without a twin, or when the wall times are not apart (a stall in the longer one's passes)."""
    program, short = prepared.program, prepared.program.shorter
    if short is None or not prepared.walls or not prepared.short_walls or program.trips <= short.trips:
        return None
    loop = _whole_loop(prepared, min(prepared.walls) - min(prepared.short_walls))
    looped = {r.index: r.executions for r in prepared.scored if r.index is not None and r.executions > 1}
    raw = {index: prepared.best[index] for index in looped if index in prepared.best}
    events = sum(looped[index] for index in raw)
    return (loop, raw, events) if loop > 0 and events else None


def _whole_loop(prepared: _Prepared, apart: float) -> float:
    """A loop's own time per run from its program's wall less its twin's (``apart``): per trip, times its trips."""
    program, short = prepared.program, prepared.program.shorter
    assert short is not None
    return all_trips(apart, program.trips, short.trips)


def all_trips(apart: float, trips: int, fewer: int) -> float:
    """The time of ``trips`` trips (a loop's, a recurrent layer's steps) from the walls of ``trips`` and of
    ``fewer`` apart: ``apart`` per trip between them, times ``trips`` — what runs once a call falls out."""
    return apart / (trips - fewer) * trips


def usual_ratio(prepared: _Prepared) -> float | None:
    """A loop program's loop time at the median of its passes ÷ at their smallest (at least 1): how
    much slower than its fastest the machine usually ran it while calibrating (on a 2-core VM small
    kernels in a loop ran in two states 1.5–2.5× apart for tens of seconds at a time). Each pass's
    loop time is its own wall less its twin's, timed just after it, so that both are of one state (the
    medians of the two apart put a pass's slow wall against another's fast twin: a scanned cell read 2.9×
    where it ran 1.7× slower); of an even number of passes the higher middle one, a state that ran (three
    fast passes and three slow ones average to neither). The fastest is the smallest wall less the
    smallest twin's (``_loop``). None without a loop time."""
    found = _loop(prepared)
    if found is None:
        return None
    each = pass_loops(prepared)
    usual = _whole_loop(prepared, each[usual_pass(each)])
    return max(1.0, usual / found[0]) if usual > 0 else None


def pass_loops(prepared: _Prepared) -> list[float]:
    """Each pass's own loop time: its wall less its twin's, timed just after it (a wall-timed loop
    program, with no twin: its wall)."""
    if prepared.program.shorter is None:
        return list(prepared.walls)
    return [wall - twin for wall, twin in zip(prepared.walls, prepared.short_walls, strict=False)]


def usual_pass(each: Sequence[float]) -> int:
    """The pass whose loop time is the usual one: the higher middle (a state that ran)."""
    return list(each).index(statistics.median_high(each))


def pass_wakes(prepared: _Prepared) -> tuple[float, float] | None:
    """The host's cross-core wake-up (``hardware.wake``) just before a loop program's fastest pass (its
    smallest wall) and before its usual one (the pass ``usual_ratio`` reads): the states its two times were
    measured in (a wall-timed loop program, with no twin: its passes' medians). None where a pass's was not
    measured."""
    each = pass_loops(prepared)
    if not each or len(prepared.wakes) < len(each):
        return None
    fast = min(range(len(each)), key=lambda i: prepared.walls[i])
    found = prepared.wakes[fast], prepared.wakes[usual_pass(each)]
    return None if found[0] is None or found[1] is None else (found[0], found[1])


def loop_wakes(found: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """A calibration's host states: the median over its loop programs of the wake-up before each one's
    fastest pass, and of the wake-up before each one's usual pass (``KernelCalibration.loop_wakes``)."""
    if not found:
        return None
    return statistics.median(fast for fast, _ in found), statistics.median(usual for _, usual in found)


def profiler_cost(prepared: Sequence[_Prepared]) -> float | None:
    """The profiler's cost per kernel event, from the loop programs: the median of their loop
    kernels' profiled time above their loop's own time, per event, over those where it is above
    (198–429 ns a event on a 2-core VM, the most in bodies of tiny kernels alone: threefry's
    rounds). Where it is below, the loop spends time between its events (a library's thread pool
    around a dot: a scan of 512-wide dots ran 2 µs a trip beyond them), which hides the cost, and
    says nothing of it. 0 when fewer than half the loop programs are above: the profiler's cost is
    then outside the events, between them (TensorFlow's executor: 10 of 12 loop programs' events
    summed to 0.4–0.9 of their loop's own time on a 2-core VM, where 14 of JAX's 21 exceeded it),
    and taking it off would take the ops' own work (a 0.18 µs ``Mul`` event less 0.46 µs).
    None without a loop program."""
    found = [(sum(raw.values()) - loop) / events for loop, raw, events in filter(None, map(_loop, prepared))]
    above = [cost for cost in found if cost > 0]
    if not found:
        return None
    return statistics.median(above) if 2 * len(above) >= len(found) else 0.0


def _loop_times(prepared: _Prepared, cost: float | None) -> dict[int, float]:
    """A loop program's loop kernels' seconds per run (``_loop``): the loop's own time shared as
    their profiled times less the profiler's ``cost`` per event (this program's own estimate when
    None), each at least ``_LOOP_FLOOR_SHARE`` of its own, and none above its profiled time as the
    rest are read (scaled by ``unwatched_ratio``): a loop whose wall time exceeds its events spent
    it between them (a scan of 512-wide dots, 5% more than its events on a 2-core VM; a noisy
    spell, 2× in one pass), and the profiler never makes a kernel faster. {} for a program
    without a loop time."""
    found = _loop(prepared)
    if found is None:
        return {}
    loop, raw, events = found
    cost = max(0.0, (sum(raw.values()) - loop) / events) if cost is None else cost
    executions = {r.index: r.executions for r in prepared.scored if r.index is not None}
    own = {i: max(seconds - executions[i] * cost, _LOOP_FLOOR_SHARE * seconds) for i, seconds in raw.items()}
    scale, ceiling = loop / sum(own.values()), prepared.unwatched_ratio()
    return {index: min(seconds * scale, raw[index] * ceiling) for index, seconds in own.items()}


def _profiled_points(prepared: _Prepared, cost: float | None = None) -> list[Point | _Pending]:
    """Each kernel's profiled time per run, the smallest over the passes, as a point. A program
    whose profile cannot be read per kernel is refused (NeuralCostError, noted by
    ``measure_points``): when kernels that run none of its records took most of its kernel time,
    a kernel measured well under its roofline bound, or a kernel runs several contractions. A
    program some of whose kernels the profiler timed as one fused op is one pending entry,
    resolved as a wall-timed program of several kernels is: the main kernel's time is theirs less
    what the first fit expects of the others. A loop program's loop kernels are timed off its wall
    times (``_loop_times``), record-less ones included, and only the rest are checked for records
    joined elsewhere."""
    estimate, program, scored, fused = prepared.estimate, prepared.program, prepared.scored, prepared.fused
    unwatched = prepared.unwatched_ratio()
    best = {key: seconds * unwatched for key, seconds in prepared.best.items() if key is not None}
    rows = [row for row in scored if row.index is not None and row.index in best]
    looped = _loop_times(prepared, cost)  # a loop's kernels: its wall time per trip, not their events
    timed = [row for row in rows if row.index not in looped]  # the rest, read off their events
    own = {row.index for row in timed if not row.operations and kernel_class(estimate, row) in RECORDLESS_POINTS}
    total = sum(best[row.index] for row in timed if row.index is not None)
    unjoined = sum(
        best[row.index] for row in timed if row.index is not None and not (row.operations or row.index in own)
    )
    if any(row.operations for row in timed) and unjoined >= _UNJOINED_SHARE * total:
        raise NeuralCostError(
            f"kernels that run none of its records took {unjoined / total:.0%} of its kernel time: its records "
            f"were joined to other kernels than those that ran them"
        )
    best.update(looped)
    # A loop's record-less kernels too (a threefry round's copies): their class is their opcodes',
    # their roofline their compiled traffic, their time the loop's, not a joined record's.
    usable = [row for row in rows if (row.operations or row.index in looped or row.index in own) and row.executions
              and not row.unmodeled]  # fmt: skip
    for row in usable:
        assert row.index is not None
        if best[row.index] < max(_BELOW_COMPUTE * row.compute_seconds, _BELOW_MEMORY * row.memory_seconds):
            raise NeuralCostError(
                f"kernel {row.name} measured {best[row.index] / row.bound_seconds:.2f}× its roofline bound: its "
                f"events do not span the work of its records"
            )
    times = {row.index: best[row.index] for row in usable if row.index is not None}
    if len(usable) > 1 and fused:
        main = one_part(estimate, usable[0], prepared.hardware)  # the costliest bound first
        rest = tuple(part for row in usable[1:] for part in parts(estimate, row, prepared.hardware))
        return [_Pending(program.name, main, rest, sum(times.values()))]
    points: list[Point | _Pending] = []
    ratio = usual_ratio(prepared) if looped else None
    for row in usable:  # a kernel of several contractions is no one class's point: ``one_part`` refuses it
        assert row.index is not None
        point = one_part(estimate, row, prepared.hardware).point(times[row.index], program.name)
        usual = None if ratio is None or row.index not in looped else point.measured_seconds * ratio
        points.append(replace(point, usual_seconds=usual))
    return points


def _resolve(pending: Sequence[_Pending], first: KernelCalibration) -> tuple[list[Point], list[str]]:
    """Points for several-kernel programs, each main kernel's time the program's less the other
    kernels' expected time by the first fit (their bound where it has no class); a program whose
    other kernels would take most of its time gives none (its main kernel's share is too uncertain)."""
    points, notes = [], []
    floors = first.floors()
    for item in pending:
        others = 0.0
        for part in item.others:
            model, n = class_model(first, part.kernel_class), part.repeats
            bound = max(part.compute_seconds, part.memory_seconds)
            floor = floors.get(model.name) if model else None
            memory = part.memory_on(model) if model else part.memory_seconds
            others += n * model.seconds(part.compute_seconds / n, memory / n, floor) if model else bound
        left = item.seconds - others
        if left < 0.5 * item.seconds:
            notes.append(f"{item.program}: its other kernels are expected to take {others / item.seconds:.0%} of it")
            continue
        usual = None if item.usual_seconds is None else max(left, item.usual_seconds - others)  # the others alike
        call = None
        if item.steps_seconds is not None:  # a layer's steps apart from its cost per call, the others' in the call's
            call, usual = max(left - item.steps_seconds, 0.0), usual and usual * item.steps_seconds / left
            left = item.steps_seconds
        point = replace(item.main.point(left, item.program), call_seconds=call, call_bytes=item.call_bytes)  # a step
        points.append(point if usual is None else replace(point, usual_seconds=point.measured_seconds * usual / left))
    return points, notes
