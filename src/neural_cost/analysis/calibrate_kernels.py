"""The kernel calibration: micro-benchmarks through a framework, fitted into a kernel model.

``calibrate_kernels(adapter)`` runs the adapter's micro-programs (``adapter.microbenchmarks()``:
one kernel class at one size each), traces each like a workload, scores its kernels on the
device's spec (``analysis/kernels.py``) and measures them — as the adapter's
``kernel_timing`` says: ``wall`` (an eager framework: the program is one kernel, timed whole,
Python and dispatch included as they are between a model's eager ops) or ``profile`` (a
compiled one: each kernel's own time from the profiler, scaled by the program's wall time
unwatched ÷ its wall time under the profiler, which slows what it watches; a loop's kernels off
the loop's own wall time, ``profiled_points``). Every program is measured in
``passes`` separate passes, round the whole grid in turn, and the smallest of their medians
kept (a shared machine stalls; a stall never makes a kernel faster). The points are fitted per kernel class
(``hardware/kernel_model.py``) with their cross-validated error, and saved in the machine's
calibration cache by ``kernel_calibration``, one file per framework, with the date and the framework's
version, each point the median of this and the last two calibrations' (a loop's kernel: the smallest where
their fastest passes ran in two host states; ``calibration_history``); it reads that file, or calibrates when there is
none (or it was made with another framework version). A loop program (one with a shorter twin, or a whole
recurrent layer timed by its wall) gets ``LOOP_PASSES`` more passes, halfway through the grid's, of its walls only.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import NeuralCostError
from ..costs.estimate import estimate_trace
from ..hardware import kernel_model
from ..hardware.host_cache import cache_dir, key_digest
from ..hardware.kernel_model import KernelCalibration, Point, fit_calibration, load_calibration, save_calibration
from ..hardware.spec import HardwareSpec
from ..hardware.wake import cross_core_wake
from .calibration_history import history_path, is_loop, load_history, merged, probes_before, save_history
from .expected import installed_versions
from .harness import harness_seconds, net
from .kernels import kernel_rows
from .profiled_points import (
    _fused,
    _Pending,
    _per_run,
    _Prepared,
    _profiled_points,
    _resolve,
    loop_wakes,
    pass_wakes,
    profiler_cost,
)
from .wall_points import looped, usual_of, wall_points
from .workload import time_workload, trace_workload

if TYPE_CHECKING:
    from ..adapters.base import FrameworkAdapter, MicroProgram

_WALL = "wall time of one-kernel programs (Python and dispatch included)"
_PROFILED = (
    "each kernel's profiled time, scaled by its program's wall time ÷ its wall time under the profiler when its "
    "kernels fill at least half of the latter (unscaled in a program of 2 ms or more with few kernel events); a "
    "loop's kernels share its own wall time (the program's less its twin's at fewer trips), less the profiler's cost "
    "per event"
)

#: Seconds of timed runs each program gets per pass (at least ``_MIN_REPEATS`` runs): 0.04 s and
#: 5 runs took a JAX calibration 4.1 minutes on the 2-core VM, over the 3 it is allowed; a pass's
#: median of 3 runs of a program of 8 ms or more moves less than its passes do.
_PASS_SECONDS = 0.02
_MIN_REPEATS = 3
_MAX_REPEATS = 400


def _prepare(adapter: FrameworkAdapter, hardware: HardwareSpec, program: MicroProgram) -> _Prepared:
    """The program traced and scored, with as many runs a pass as fill ``_PASS_SECONDS``, counted
    from one run's time after a warmup run (which also compiles, for an adapter that reads kernels from it)."""
    first = time_workload(adapter, program.fn, program.args, program.kwargs, warmup=1, repeats=1).median_seconds
    repeats = int(min(_MAX_REPEATS, max(_MIN_REPEATS, _PASS_SECONDS / max(first, 1e-7))))
    trace = trace_workload(adapter, program.fn, program.args, program.kwargs, program.trace_options)
    estimate = estimate_trace(trace)
    scored = kernel_rows(estimate, hardware)[0]
    return _Prepared(program, estimate, scored, repeats, trace, hardware, first_run=first)


#: Kernel events a profile of one program gathers at most (fewer runs of a loop of thousands a run: stopping
#: ``jax.profiler`` and reading its events cost about 50 µs an event on a 2-core VM, 1.8 s for three loop
#: programs' 35,600; a loop kernel's median over one run's trips is of hundreds of events already).
_PROFILED_EVENTS = 4_000
#: Profiled runs of a program per pass at most: a kernel's point is the median of its events.
_PROFILED_RUNS = 10


def _profiled_runs(prepared: _Prepared) -> int:
    """Profiled runs of a program: 3 to ``_PROFILED_RUNS`` as its timed runs, fewer (1 at least)
    where they would gather more than ``_PROFILED_EVENTS`` events."""
    runs = max(3, min(prepared.repeats, _PROFILED_RUNS))
    events = sum(row.executions for row in prepared.scored if row.index is not None)
    return runs if events * runs <= _PROFILED_EVENTS else max(1, _PROFILED_EVENTS // events)


def _time_once(adapter: FrameworkAdapter, prepared: _Prepared, *, profiled: bool = True) -> None:
    """One pass over one program: its wall time, or one profile of its kernels (a loop program's walls before it;
    ``profiled`` False: those walls only — a loop's further passes, ``measure_points``)."""
    program = prepared.program
    if adapter.kernel_timing == "wall":
        loop = looped(prepared)  # a whole recurrent layer: a loop, its passes and host states kept
        if loop:
            prepared.wakes.append(cross_core_wake())
        harness = harness_seconds(adapter)  # each wall less what the timing harness adds (``harness.py``)
        timed = time_workload(adapter, program.fn, program.args, program.kwargs, warmup=2, repeats=prepared.repeats)
        kept = net(timed.median_seconds, harness)
        prepared.keep(None, kept)
        if loop:
            prepared.walls.append(kept)
        if (fewer := program.fewer_steps) is not None:  # just after it: a pass's two walls of one state
            few = time_workload(adapter, fewer.fn, fewer.args, fewer.kwargs, warmup=2, repeats=prepared.repeats)
            prepared.fewer_walls.append(net(few.median_seconds, harness))
        return
    if program.shorter is not None:  # the host's state for this pass's loop time (``loop_wakes``)
        prepared.wakes.append(cross_core_wake())
    fn, args, kwargs, repeats = program.fn, program.args, program.kwargs, prepared.repeats
    # ``watched_alone``: no unwatched wall, its ratio 1
    wall = None if prepared.watched_alone else time_workload(adapter, fn, args, kwargs, warmup=1, repeats=repeats)
    if (short := program.shorter) is not None and wall is not None:  # its twin just after: two walls of one state
        prepared.walls.append(wall.median_seconds)
        timed = time_workload(adapter, short.fn, short.args, short.kwargs, warmup=1, repeats=prepared.repeats)
        prepared.short_walls.append(timed.median_seconds)
    if not profiled and program.shorter is not None:  # without a twin its profile is its only measure
        return
    profile = adapter.profile(
        fn, args, kwargs, trace=prepared.trace, runs=_profiled_runs(prepared), **program.trace_options
    )
    prepared.fused = prepared.fused or _fused(profile, {measured.kernel for measured in profile.kernels})
    # the profiler slows what it watches: the kernels scaled by the wall unwatched ÷ under it (``unwatched_ratio``)
    if wall is not None:
        prepared.unwatched.append(profile.unwatched_ratio(wall.median_seconds))
    executions = {row.index: row.executions for row in prepared.scored if row.index is not None}
    for measured in profile.kernels:
        seconds = _per_run(profile, measured.kernel, executions.get(measured.kernel, 0))
        if seconds is not None and seconds > 0:
            prepared.keep(measured.kernel, seconds)  # raw: scaled once, by the passes' median ratio


def _points(
    adapter: FrameworkAdapter, prepared: _Prepared, first_touch: float | None, cost: float | None = None
) -> list[Point | _Pending]:
    """A measured program's points, as its framework's kernels are timed (wall or profiled; ``cost``:
    the profiler's per event, ``profiler_cost``)."""
    if adapter.kernel_timing == "wall":
        return wall_points(prepared, first_touch)
    return _profiled_points(prepared, cost)


#: A loop program (one with a shorter twin, or a wall-timed recurrent layer: ``wall_points.looped``) gets this
#: many more passes, one halfway through each of the grid's (those beyond the grid's passes after it, this many
#: seconds apart): on a 2-core VM small kernels in a loop ran in two states 1.5–2.3× apart for 10–40 s at a time,
#: and the grid's three passes, about 35 s apart, caught only the slow one for three of JAX's seven kept scan cells
#: in each of three calibrations. A further pass of a profiled loop program times its walls only (its loop's time:
#: ``profiled_points._loop``): its profile, which shares that time among its kernels, is the grid passes' (a JAX
#: calibration's loop programs took 13 s a pass profiled, most of it reading thousands of events).
LOOP_PASSES, LOOP_PAUSE = 3, 5.0


def measure_points(
    adapter: FrameworkAdapter,
    hardware: HardwareSpec,
    programs: Sequence[MicroProgram],
    *,
    passes: int = 3,
    progress: Callable[[int, int, str], None] | None = None,
    first_touch: float | None = None,
    loop_passes: int = LOOP_PASSES,
    wakes: list[tuple[float, float]] | None = None,
) -> tuple[list[Point | _Pending], list[str]]:
    """Every program's points (or pending several-kernel programs), and a note for each
    program that could not be measured; ``wakes`` gets each loop program's host states (``pass_wakes``).
    The passes go round the whole grid in turn, so that
    one program's passes are minutes apart: a slow spell of a shared machine (everything 1.7×
    slower for seconds at a time here) rarely covers all of them. The loop programs get
    ``loop_passes`` more (``LOOP_PASSES``; none for the quick grid's calibration)."""
    with adapter.keeping_compiled(2 * len(programs)):  # each program and its shorter twin
        return _measure_points(adapter, hardware, programs, passes, progress, first_touch, loop_passes, wakes)


def _measure_points(
    adapter: FrameworkAdapter,
    hardware: HardwareSpec,
    programs: Sequence[MicroProgram],
    passes: int,
    progress: Callable[[int, int, str], None] | None,
    first_touch: float | None,
    loop_passes: int,
    wakes: list[tuple[float, float]] | None = None,
) -> tuple[list[Point | _Pending], list[str]]:
    notes: list[str] = []
    prepared: list[_Prepared] = []
    steps = len(programs) * (passes + 1)
    for i, program in enumerate(programs):
        if progress is not None:
            progress(i, steps, program.name)
        try:
            prepared.append(_prepare(adapter, hardware, program))
        except NeuralCostError as error:
            notes.append(f"{program.name}: {error}")
    failed: set[str] = set()

    def time_once(item: _Prepared, profiled: bool = True) -> None:
        if item.program.name in failed:
            return
        try:
            _time_once(adapter, item, profiled=profiled)
        except NeuralCostError as error:
            failed.add(item.program.name)
            notes.append(f"{item.program.name}: {error}")

    loops = [item for item in prepared if looped(item)]
    middle = len(prepared) // 2
    for number in range(passes):
        for i, item in enumerate(prepared):
            if progress is not None:
                progress(len(programs) * (number + 1) + i, steps, item.program.name)
            time_once(item)
            if i == middle and number < loop_passes:  # a loop program's further pass: half a grid pass away
                for loop in loops:
                    time_once(loop, profiled=False)
    for _ in range(loop_passes - passes if loops else 0):  # any more, seconds apart
        time.sleep(LOOP_PAUSE)
        for loop in loops:
            time_once(loop, profiled=False)
    if wakes is not None:
        kept = (item for item in loops if item.program.name not in failed and usual_of(item) is not None)
        wakes += filter(None, (pass_wakes(item) for item in kept))  # of the loops that have a usual time
    points: list[Point | _Pending] = []
    cost = profiler_cost([item for item in prepared if item.program.name not in failed])
    for item in prepared:
        if item.program.name in failed:
            continue
        try:
            found = _points(adapter, item, first_touch, cost)
        except NeuralCostError as error:
            notes.append(f"{item.program.name}: {error}")
            continue
        if not found:
            notes.append(f"{item.program.name}: no kernel with a measured time")
        points += found
    return points, notes


def _first_touch(adapter: FrameworkAdapter, probes: int = 3, pause_seconds: float = 1.0) -> float | None:
    """The adapter's first-touch cost per byte, the smallest of ``probes`` probes ``pause_seconds``
    apart: page faults slow down for seconds at a time on a shared machine (one probe of the
    smallest of nine fills read 6.4 µs a page, the same probe 0.85 µs a minute later)."""
    found = []
    for i in range(probes):
        if i:
            time.sleep(pause_seconds)
        cost = adapter.first_touch_seconds_per_byte()
        if cost is None:
            return None
        found.append(cost)
    return min(found)


def calibrate_kernels(
    adapter: FrameworkAdapter,
    *,
    hardware: HardwareSpec | None = None,
    quick: bool = False,
    passes: int = 3,
    progress: Callable[[int, int, str], None] | None = None,
    probes_of: Sequence[str] = (),
) -> KernelCalibration:
    """Measure the adapter's micro-programs and fit them (the module docstring); not saved. ``probes_of``: the
    drift probes' programs of an earlier calibration, measured again (``probe_times``)."""
    from ..hardware.host_calibration import live_machine_key

    programs = adapter.microbenchmarks(quick)
    if not programs:
        raise NeuralCostError(
            f"{type(adapter).__name__} has no kernel micro-benchmarks: its kernels cannot be calibrated "
            f"(their expected time is their roofline bound)"
        )
    spec = hardware if hardware is not None else adapter.hardware()
    started = time.perf_counter()
    first_touch = _first_touch(adapter)
    evicted = adapter.evicted_seconds_per_byte()
    wakes: list[tuple[float, float]] = []
    measured, notes = measure_points(adapter, spec, programs, passes=passes, progress=progress, first_touch=first_touch,
                                     loop_passes=0 if quick else LOOP_PASSES, wakes=wakes)  # fmt: skip
    points = [p for p in measured if isinstance(p, Point)]
    pending = [p for p in measured if isinstance(p, _Pending)]
    if pending and points:
        resolved, pending_notes = _resolve(pending, fit_calibration(adapter.framework, spec, points))
        points += resolved
        notes += pending_notes
    if not points:
        raise NeuralCostError(
            f"kernel calibration for {adapter.framework}: no micro-program could be measured ({notes[:3]})"
        )
    wall = adapter.kernel_timing == "wall"
    took = time.perf_counter() - started
    notes.append(f"{len(programs)} micro-programs, {len(points)} kernel points in {took:.0f} s")
    probes = probe_times(adapter, spec, first_touch, names=probes_of)
    calibration = fit_calibration(
        adapter.framework,
        spec,
        points,
        machine=live_machine_key(),
        versions=installed_versions(adapter.framework),
        date=datetime.date.today().isoformat(),
        method=_WALL if wall else _PROFILED,
        notes=notes,
        first_touch_seconds_per_byte=first_touch,
        fresh_results=wall,
        evicted_seconds_per_byte=evicted,
    )
    return replace(calibration, probes=probes, loop_wakes=loop_wakes(wakes))


def measure_once_more(
    adapter: FrameworkAdapter,
    hardware: HardwareSpec,
    program: MicroProgram,
    passes: int,
    first_touch: float | None,
    screen: tuple[float, float] | None = None,
) -> tuple[Point, float] | None:
    """One program measured as the calibration measures (the smallest of ``passes``): its main
    point and its first run (seconds). None, unmeasured, when that first run is outside ``screen``."""
    prepared = _prepare(adapter, hardware, program)
    if screen is not None and not screen[0] <= prepared.first_run <= screen[1]:
        return None
    for _ in range(passes):
        _time_once(adapter, prepared)
    found = _points(adapter, prepared, first_touch)
    points = [p for p in found if isinstance(p, Point)]
    # a recurrent layer's program is its steps and a few copies: as a loop probe, its main part at its whole time
    points += [
        p.main.point(p.seconds, p.program) for p in found if isinstance(p, _Pending) and is_loop(p.main.kernel_class)
    ]
    point = max(points, key=lambda p: p.measured_seconds, default=None)
    return None if point is None else (point, prepared.first_run)


#: Drift probes: programs of the quick grid of 50 µs to 2 ms (long enough for the clock, short
#: enough to take a second or two in all), the longest of each family, these first: of JAX's six
#: probes of 50–260 µs, the add, softmax and sum re-ran at 0.3–0.7× minutes after their
#: calibration in a fresh process (a median of 0.42–0.81 over six), its 260 µs convolution at 1.0–1.7×.
_PROBE_RANGE = (50e-6, 2e-3)
#: A probe candidate's first run, as a multiple of the range's ends, past which it is not measured
#: further: half the start (one run is rarely twice as fast as its median), thrice the end (a
#: program of several kernels runs longer than its longest).
_PROBE_SCREEN = (0.5, 3.0)
_PROBED = ("matmul", "elementwise", "conv", "reduce", "norm", "softmax", "transcendental", "gather", "copy")


def _probed(
    adapter: FrameworkAdapter,
    hardware: HardwareSpec,
    programs: Sequence[MicroProgram],
    passes: int,
    touch: float | None,
    screen: tuple[float, float] | None = None,
) -> Iterator[tuple[float, str, tuple[str, float]]]:
    """(first run, name, (its kernel's class, seconds)) of each program measured (``measure_once_more``)."""
    for program in programs:
        try:
            probed = measure_once_more(adapter, hardware, program, passes, touch, screen)
        except NeuralCostError:
            continue
        if probed is not None and probed[0].measured_seconds > 0:
            yield probed[1], program.name, (probed[0].kernel_class, probed[0].measured_seconds)


def probe_times(
    adapter: FrameworkAdapter,
    hardware: HardwareSpec,
    touch: float | None = None,
    *,
    count: int = 6,
    passes: int = 2,
    names: Collection[str] = (),
) -> dict[str, tuple[str, float]]:
    """The drift probes of a calibration: the quick grid measured (the smallest of ``passes``),
    and of its programs of 50 µs to 2 ms the longest of each family (``conv:narrow`` is a conv),
    up to ``count``, families in ``_PROBED`` order first (compute- and memory-bound both), and
    beside them the longest program of 50 µs to 2 ms whose kernel is a loop's (``is_loop``: its
    step's time is short). A program whose first run took under half the range's start, or over
    thrice its end, is not measured further (``_PROBE_SCREEN``: its kernel cannot be in range; a
    run is never shorter than its kernel). With ``names`` (an earlier calibration's probes,
    ``probes_before``) those programs alone, whatever their time now, unless none but a loop's is
    measured: choosing took a TensorFlow calibration 22–29 s of its 3.5 minutes on a 2-core VM."""
    grid = adapter.microbenchmarks(True)
    again = {name: probe for _, name, probe in _probed(adapter, hardware, [p for p in grid if p.name in names],
                                                       passes, touch)}  # fmt: skip
    if any(not is_loop(kind) for kind, _ in again.values()):
        return again
    found: dict[str, tuple[str, float]] = {}
    loops: list[tuple[float, str, tuple[str, float]]] = []  # (program seconds, name, (class, kernel seconds))
    low, high = _PROBE_RANGE
    for first_run, name, (kind, seconds) in _probed(
        adapter, hardware, grid, passes, touch, (low * _PROBE_SCREEN[0], high * _PROBE_SCREEN[1])
    ):
        if is_loop(kind):
            if low <= first_run <= high:
                loops.append((first_run, name, (kind, seconds)))
        elif low <= seconds <= high:
            found[name] = (kind, seconds)
    chosen: dict[str, tuple[str, tuple[str, float]]] = {}
    rank, group = {n: i for i, n in enumerate(_PROBED)}, {k: kernel_model.family(k) or k for k, _ in found.values()}
    for name, (kind, seconds) in sorted(found.items(), key=lambda it: (rank.get(group[it[1][0]], 99), -it[1][1])):
        chosen.setdefault(group[kind], (name, (kind, seconds)))
    loop = [(name, probe) for _, name, probe in sorted(loops, reverse=True)[:1]]
    return dict(list(chosen.values())[:count] + loop)


def calibration_path(framework: str, root: Path | None = None) -> Path:
    """This machine's kernel calibration file for ``framework`` in the calibration cache."""
    from ..hardware.host_calibration import live_machine_key

    return (root or cache_dir()) / f"kernels-{framework}-{key_digest(live_machine_key())}.json"


def kernel_calibration(
    adapter: FrameworkAdapter,
    *,
    recalibrate: bool = False,
    fresh: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> KernelCalibration:
    """This machine's kernel model for ``adapter``'s framework: the cached one when it was made with the installed
    framework version, else calibrated now (minutes), merged with the last two (``calibration_history``; ``fresh``:
    the history starts over; its newest entry's drift probes are measured again: ``probes_before``), and cached."""
    from ..hardware.host_calibration import live_machine_key

    path = calibration_path(framework := adapter.framework)
    if path.exists() and not recalibrate:
        try:
            cached = load_calibration(path)
        except NeuralCostError:
            cached = None
        if cached is not None and cached.versions == installed_versions(framework):
            return cached
    earlier = [] if fresh else load_history(history_path(path))
    probes = probes_before(earlier, installed_versions(framework), live_machine_key())
    calibration, entries = merged(calibrate_kernels(adapter, progress=progress, probes_of=probes), earlier)
    save_history(entries, history_path(path))  # first: a history without its calibration only steadies the next
    save_calibration(calibration, path)
    return calibration
