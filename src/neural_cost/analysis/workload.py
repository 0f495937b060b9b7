"""One workload — ``fn(*args, **kwargs)`` — timed, traced and scored through any adapter.

``neural-cost analyze``, ``neural-cost compare`` and ``Pipeline.run`` all go through
``analyze_workload``: what differs between frameworks is asked of the adapter (its
``workload_options``, ``device_of``, ``hardware``, ``compiles_when_timing``), never decided
here by the framework's name.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from ..core.errors import AdapterError
from ..core.profile import slowed_note, stalled_note
from ..core.units import format_seconds
from ..costs.estimate import estimate_trace
from ..hardware.kernel_model import KernelCalibration
from ..hardware.spec import HardwareSpec
from ..hardware.wake import cross_core_wake, mean_wake
from ..measure.timing import Measurement, before_timing, benchmark, warming
from .expected import expected_time
from .gap import GapReport, analyze_gap
from .usual_loops import loops_now, wake_share

if TYPE_CHECKING:
    from ..adapters.base import FrameworkAdapter
    from ..core.profile import Profile
    from ..core.records import Trace


def time_workload(
    adapter: FrameworkAdapter | None,
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    warmup: int = 10,
    repeats: int = 30,
    jit: bool = True,
    clock: Callable[[], float] | None = None,
    options: Mapping[str, Any] | None = None,
    warm_seconds: float = 0.0,
) -> Measurement:
    """Time ``fn(*args, **kwargs)`` with ``adapter.benchmark`` (``options`` are its keywords:
    PyTorch's ``training``/``loss_fn``/``optimizer``...); with the plain harness when there is
    no adapter, when a ``clock`` is injected, or when ``jit=False`` and the adapter compiles
    what it times (JAX's jit, tf.function): the function then runs as written, op by op.
    ``warm_seconds``: after the ``warmup`` runs, untimed runs until that long has passed
    (``measure.timing.warming``: inside the harness, after the adapter compiled)."""
    keywords = dict(kwargs or {})
    if clock is not None:
        return benchmark(fn, *args, warmup=warmup, repeats=repeats, clock=clock, **keywords)
    with warming(warm_seconds):  # inside the harness, after the adapter compiled: the runs timed next
        if adapter is None or (not jit and adapter.compiles_when_timing):
            return benchmark(fn, *args, warmup=warmup, repeats=repeats, **keywords)
        return adapter.benchmark(fn, *args, warmup=warmup, repeats=repeats, kwargs=keywords, **dict(options or {}))


def program_options(
    adapter: FrameworkAdapter | None,
    trace_options: Mapping[str, Any] | None,
    benchmark_options: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The trace's and the timed runs' options, so that both run one program: an option that
    chooses the program (``adapter.program_options``: PyTorch's ``training``/``loss_fn``/
    ``optimizer``, a Keras model's ``training``, JAX's ``static_argnums``) given to one only is
    given to the other too. One given to both with different values is an error: a training
    step's bound against forward-only timings would read as a 3× speed-up."""
    traced, timed = dict(trace_options or {}), dict(benchmark_options or {})
    for name in sorted(adapter.program_options if adapter is not None else ()):
        if name in traced and name in timed and not _same_option(traced[name], timed[name]):
            raise AdapterError(
                f"{name}={traced[name]!r} was given to the trace but {name}={timed[name]!r} to the timed runs: "
                f"the report would score one program against another's time. Pass the same {name} to both "
                f"(trace_options and benchmark_options), or to one of them only"
            )
        for given, other in ((traced, timed), (timed, traced)):
            if name in given:
                other.setdefault(name, given[name])
    return traced, timed


def _same_option(a: Any, b: Any) -> bool:
    """Whether two values of a program option are the same: the same object, or equal plain values
    (an int, its one-tuple and its one-list are the same ``static_argnums``)."""
    if a is b:
        return True
    a, b = ((a,) if isinstance(a, int) and not isinstance(a, bool) else tuple(a) if isinstance(a, list) else a
            for a in (a, b))  # fmt: skip
    plain = (bool, int, float, str, tuple, list, type(None))
    return isinstance(a, plain) and isinstance(b, plain) and a == b


class WorkloadTiming(TypedDict, total=False):
    """The keywords ``time_compiled_or_as_written`` passes on to ``time_workload``."""

    warmup: int
    repeats: int
    jit: bool
    clock: Callable[[], float] | None


def time_compiled_or_as_written(
    adapter: FrameworkAdapter | None,
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    **timing: Unpack[WorkloadTiming],
) -> tuple[Measurement, str | None]:
    """``time_workload``, and a function the adapter cannot compile (a JAX function branching
    in Python on array values, say) timed as written instead: ``(measurement, note)``, the
    note saying why, or None. A function that also fails as written raises that error."""
    try:
        return time_workload(adapter, fn, args, kwargs, **timing), None
    except Exception as error:
        # only a compiled run falls back: no injected clock, jit left on (time_workload's default)
        compiled = timing.get("clock") is None and timing.get("jit", True)
        if adapter is None or not compiled or not adapter.compiles_when_timing:
            raise
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
    as_written: WorkloadTiming = {**timing, "jit": False}
    measurement = time_workload(adapter, fn, args, kwargs, **as_written)
    return measurement, f"not compiled ({reason}): timed as written, op by op"


def trace_workload(
    adapter: FrameworkAdapter,
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    trace_options: Mapping[str, Any] | None = None,
) -> Trace:
    """``adapter.trace`` with ``trace_options`` and the options the adapter reads off the
    workload itself. The model's keywords are passed as ``kwargs=`` only when there are some:
    an adapter written as ``trace(self, model, inputs, **kwargs)`` keeps working."""
    options = {**adapter.workload_options(fn, args, dict(kwargs or {})), **(trace_options or {})}
    if kwargs:
        return adapter.trace(fn, args, kwargs=dict(kwargs), **options)
    return adapter.trace(fn, args, **options)


def analyze_workload(
    adapter: FrameworkAdapter,
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    hardware: HardwareSpec | None = None,
    *,
    warmup: int = 10,
    repeats: int = 30,
    device: Any = None,
    measurement: Measurement | None = None,
    trace_options: Mapping[str, Any] | None = None,
    benchmark_options: Mapping[str, Any] | None = None,
    profile: bool = True,
    profile_runs: int = 3,
    calibration: KernelCalibration | None = None,
    floor_seconds: float | None = None,
    floor_note: str | None = None,
    warm_seconds: float = 0.0,
    wake_seconds: float | None = None,
    wake_before: float | None = None,
) -> GapReport:
    """Time ``fn(*args, **kwargs)`` with ``adapter`` (unless ``measurement`` is given), trace
    it with the same adapter, and score it against ``hardware`` — by default the spec of
    ``device``, else of the device the workload runs on (``adapter.device_of``), else of the
    adapter's own device. ``trace_options`` go to ``adapter.trace`` (``param_argnums=``...),
    ``benchmark_options`` to ``adapter.benchmark``; the options that choose the program (a
    PyTorch training step's ``training``/``loss_fn``/``optimizer``) given to one are given to the
    other too, and different values for the two are an error (``program_options``).
    ``profile`` (default on, where the adapter has a profiler): ``profile_runs`` more runs under
    the framework's profiler, after the timed ones, give every row its measured time; a profiler
    that fails is a note. With a
    ``calibration`` (``analysis.calibrate_kernels.kernel_calibration``) the report also gives the
    expected time of the trace (plus ``floor_seconds``, ``analysis.expected.framework_floor``).
    ``warm_seconds``: untimed runs for at least that long before the timed ones (``time_workload``) and
    before the profiled ones (``profile_workload``). ``wake_seconds``, ``wake_before``: the host's cross-core
    wake-up just after the timed runs and just before them (``hardware.wake``; measured here, with a
    calibration, when this times them) for the expected time in the host's state then (``usual_loops.loops_now``)."""
    args = tuple(args)
    keywords = dict(kwargs or {})
    adapter.workload_options(fn, args, keywords)  # a workload that cannot run fails before it is timed
    trace_options, benchmark_options = program_options(adapter, trace_options, benchmark_options)
    if measurement is None:
        # time first: an adapter that compiles to time (JAX) keeps that executable, and the
        # trace reads its cross-check from it: the program is compiled once, never twice
        # the host's state just before the timed runs and just after them, for a calibration's host states
        probing = calibration is not None and calibration.loop_wakes is not None and wake_seconds is None
        befores: list[float | None] = []
        with before_timing(lambda: befores.append(cross_core_wake())) if probing else nullcontext():
            measurement = time_workload(
                adapter, fn, args, keywords, warmup=warmup, repeats=repeats, options=benchmark_options,
                warm_seconds=warm_seconds,
            )  # fmt: skip
        if probing:
            wake_seconds, wake_before = cross_core_wake(), befores[-1] if befores else None
    trace = trace_workload(adapter, fn, args, keywords, trace_options)
    if hardware is None:
        hardware = adapter.hardware(device if device is not None else adapter.device_of(fn, args, keywords))
    measured: Profile | None = None
    notes: tuple[str, ...] = ()
    if profile:
        measured, notes = profile_workload(
            adapter, fn, args, keywords, trace, trace_options, profile_runs, warm_seconds
        )
        if measured is not None:
            said = (
                slowed_note(measured, measurement.median_seconds),
                stalled_note(measured, [kernel.name for kernel in trace.kernels]),
            )
            notes += tuple(note for note in said if note)
    estimate = estimate_trace(trace)
    expected = (
        None
        if calibration is None
        else loops_now(
            expected_time(estimate, calibration, floor_seconds, hardware=hardware, floor_note=floor_note),
            calibration.loop_wakes,
            wake_seconds,
            wake_before,
        )
    )
    return analyze_gap(estimate, measurement, hardware, profile=measured, profile_notes=notes, expected=expected)


def profile_workload(
    adapter: FrameworkAdapter,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    trace: Trace,
    trace_options: Mapping[str, Any] | None = None,
    runs: int = 3,
    warm_seconds: float = 0.0,
) -> tuple[Profile | None, tuple[str, ...]]:
    """``adapter.profile`` of the workload, or None and a note saying why there is none: an
    adapter without a profiler, a trace without kernels, a profiler that failed. ``warm_seconds``:
    untimed runs for that long just before the profiled ones (``keep_warm``), as before the timed ones."""
    if not adapter.profiles:
        return None, (f"no measured time per kernel: {type(adapter).__name__} has no profiler",)
    if not trace.kernels:
        return None, ("no measured time per kernel: the trace has no kernels to join the profiler's events to",)
    options = {**adapter.workload_options(fn, args, dict(kwargs)), **(trace_options or {})}
    try:
        with warming(warm_seconds):
            return adapter.profile(fn, args, dict(kwargs), trace=trace, runs=runs, **options), ()
    except Exception as error:  # the profiler is an extra: its failure is said, never fatal
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
        return None, (f"no measured time per kernel: the profiled pass failed ({type(error).__name__}: {reason})",)


@dataclass(frozen=True, slots=True)
class Floor:
    """The framework floor: a tiny run's time beyond its kernels' expected time, and never more than
    the profiler saw outside its kernels (``outside_seconds``; None: no profile of kernels)."""

    seconds: float
    observed_seconds: float
    kernel_seconds: float
    outside_seconds: float | None = None
    #: The tiny run's kernels in the host's busy state, taken out instead of ``kernel_seconds``: its loop kernels
    #: at their usual times (``Expected.usual_seconds``) where the cross-core wake-up around its kept pass
    #: (``wake_seconds``) read the busy state; None where it read the quiet one or none was read.
    state_seconds: float | None = None
    wake_seconds: float | None = None
    #: How much slower than at calibration the machine ran the calibration's drift probes just before the tiny
    #: run (``drift.machine_drift``'s ratio): its time, and what its profiler saw outside kernels, are divided by
    #: it before the kernels are taken out — the floor is of the machine as calibrated, as its kernels are.
    #: None: not measured, taken as it ran.
    drift: float | None = None

    @classmethod
    def of(
        cls,
        observed: float,
        kernels: float,
        outside: float | None = None,
        in_state: float | None = None,
        wake: float | None = None,
        drift: float | None = None,
    ) -> Floor:
        """The smaller of ``observed − kernels`` (what the model leaves unexplained: with a kernel
        model's miss at batch 1 in it) and ``outside`` (what ran outside every kernel: with the
        profiler's own cost in it), never below 0. A scanned JAX RNN at batch 1 ran 957 µs, its
        kernels expected at 516 µs, the profiler 72–87 µs outside them: its single-threaded
        one-row dots run slower than the grid's, a model's miss that is not a cost of every batch.
        ``in_state``: the kernels in the host's state of the tiny run (its wake-up ``wake``), subtracted
        instead where it is more: a PyTorch LSTM's batch-1 run took 994 µs with the host quiet and 1.495 ms
        with it busy, its kernels 763 µs at their fastest; a floor of 732 µs then raised the expected time
        of every batch by the host's slowdown of its loops. Its kernels read as usual, 1.740 ms, exceed that
        busy run: the floor is then unknown, taken as 0 (``unknown``), where quiet it was 231 µs.
        ``drift``: the machine's speed just before the tiny run against its calibration (``Floor.drift``), by which
        ``observed`` and ``outside`` are divided. Measured in slow spells (the probes at 1.24–1.41×), a PyTorch
        ResNet's floor read 1.07–2.04 ms and an LSTM's 0.63–0.64 ms, against 0.23–0.35 ms (0.74 once) and
        0.17–0.37 ms with the probes at 0.98–1.10×, and every batch's expected time carried the spell (an LSTM's
        rows 12–18% too slow). Not where its kernels are taken out in the host's busy state (``in_state``): that
        reads the slowdown already."""
        kept = in_state if in_state is not None and in_state > kernels else None
        # the host's busy state already reads its kernels slower (``in_state``): the drift is not taken out again
        scale = drift if drift is not None and kept is None and math.isfinite(drift) and drift > 0 else 1.0
        run, seen = observed / scale, None if outside is None else outside / scale
        unexplained = max(0.0, run - (kept if kept is not None else kernels))
        floor = unexplained if seen is None else min(unexplained, seen)
        return cls(floor, observed, kernels, outside, kept, wake, None if scale == 1.0 else scale)

    @property
    def unknown(self) -> bool:
        """Whether the tiny run's kernels in its host state are expected to take longer than the whole run:
        the state's reading of them is off for this program, and the floor cannot be told (taken as 0)."""
        return self.state_seconds is not None and self.state_seconds >= self.observed_seconds  # never drift-scaled

    def note(self) -> str:
        scaled = (
            ""
            if self.drift is None
            else f" ({format_seconds(self.observed_seconds / self.drift)} at the machine's calibrated speed: its "
            f"drift probes ran {self.drift:.2f}× their calibrated time just before)"
        )
        text = (
            f"framework floor {format_seconds(self.seconds)}: a tiny-input run took "
            f"{format_seconds(self.observed_seconds)}{scaled}, "
            f"its kernels are expected to take {format_seconds(self.kernel_seconds)}"
        )
        if self.state_seconds is not None and self.wake_seconds is not None:
            text += (
                f" ({format_seconds(self.state_seconds)} taken out instead: its loops' kernels at their usual times, "
                f"in the host's busy state, a cross-core wake-up of {format_seconds(self.wake_seconds)} around its "
                "timed runs"
                + ("; more than the run took: the floor cannot be told in this state, taken as 0)" if self.unknown
                   else ")")
            )  # fmt: skip
        if self.outside_seconds is None:
            return text
        seen = format_seconds(self.outside_seconds)
        return f"{text}, the profiler saw {seen} outside its kernels (the smaller counts)"


def framework_floor(
    adapter: FrameworkAdapter,
    fn: Any,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any] | None,
    calibration: KernelCalibration,
    *,
    trace_options: Mapping[str, Any] | None = None,
    benchmark_options: Mapping[str, Any] | None = None,
    repeats: int = 20,
    passes: int = 3,
    pause_seconds: float = 1.0,
    warm_seconds: float = 0.25,
    drift: float | None = None,
) -> Floor:
    """Time one tiny-input version of the program (``args``: its inputs at batch 1) and keep
    what its kernels do not explain: the framework's own cost per run, which does not grow with
    the batch (never below 0). Timed as the calibration times its kernels: the smallest median
    of ``passes`` separate passes, ``pause_seconds`` apart (a shared machine runs everything
    slower for seconds at a time; a stall never makes a run faster), each after ``warm_seconds``
    of untimed runs (after a pause the idle core's threads take that long to come back). Where the
    framework's kernels are timed by its profiler (``kernel_timing`` "profile": JAX, TensorFlow),
    each pass also profiles a few runs, and the floor is at most the least time they spent outside
    kernels (``Floor.of``). With the calibration's host states (``KernelCalibration.loop_wakes``) the
    host's cross-core wake-up is read just before and just after each pass's timed runs, and the fastest
    pass's kernels are taken out in its state (``Floor.state_seconds``): the floor is the framework's, not
    the host's slowdown of the run's loops. ``drift``: the machine's speed against its calibration, measured
    just before (``Floor.of``): the tiny run's time is taken at the calibrated speed, as its kernels are."""
    keywords = dict(kwargs or {})
    trace_options, benchmark_options = program_options(adapter, trace_options, benchmark_options)
    medians: list[float] = []
    befores: list[float | None] = []  # the host's state just before each pass's timed runs
    wakes: list[float | None] = []
    outside: list[float] = []
    trace: Trace | None = None
    for i in range(passes):
        if i:
            time.sleep(pause_seconds)
        read = len(befores)
        with before_timing(lambda: befores.append(cross_core_wake())) if calibration.loop_wakes else nullcontext():
            timed = time_workload(
                adapter, fn, tuple(args), keywords, warmup=5 if i == 0 else 2, repeats=repeats,
                options=benchmark_options, warm_seconds=warm_seconds,
            )  # fmt: skip
        medians.append(timed.median_seconds)
        wakes.append(mean_wake(befores[-1], cross_core_wake()) if len(befores) > read else None)
        if trace is None:  # after the first runs: a compiled program's kernels are read off what ran
            trace = trace_workload(adapter, fn, tuple(args), keywords, trace_options)
        if adapter.profiles and adapter.kernel_timing == "profile" and trace.kernels:
            profile, _ = profile_workload(adapter, fn, tuple(args), keywords, trace, trace_options, runs=5)
            if profile is not None and profile.runs:
                outside.append(profile.outside_seconds / profile.runs)
    if trace is None:
        raise ValueError(f"framework_floor(passes={passes}): at least one pass is needed to time the tiny run")
    expected = expected_time(estimate_trace(trace), calibration, None, machine={})
    shares = [wake_share(calibration.loop_wakes, wake) for wake in wakes]
    quiet = [i for i, share in enumerate(shares) if share == 0.0]  # the fastest pass that read the quiet state
    kept = min(quiet or range(len(medians)), key=lambda i: medians[i])
    # a busy pass (a share of 1 or more): its loop kernels at their usual times, never past them (a floor is
    # not extrapolated as a program's expectation in the host's state is)
    in_state = expected.usual_seconds if shares[kept] else None
    seen = min(outside) if outside else None
    return Floor.of(medians[kept], expected.kernel_seconds, seen, in_state, wakes[kept], drift)
