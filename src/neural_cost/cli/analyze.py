"""``neural-cost analyze FILE.py:build``: trace, time and score a workload, print the full report."""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import NeuralCostError
from .build import build_workload, chosen_framework, load_build, training_options
from .exits import WORKLOAD_ADVICE, exits_reported
from .progress import Progress

if TYPE_CHECKING:
    from ..adapters.base import FrameworkAdapter
    from ..analysis.gap import GapReport
    from ..hardware.spec import HardwareSpec
    from ..measure.timing import Measurement


def _adapter(framework: str, args: argparse.Namespace) -> FrameworkAdapter:
    from ..adapters import adapter_for

    trip_counts = dict(args.trip_count or [])  # (loop, N) pairs, parsed by main's --trip-count type
    return adapter_for(framework, trip_counts=trip_counts, default_trip_count=args.default_trip_count)


def _hardware(
    args: argparse.Namespace, adapter: FrameworkAdapter, measurement: Measurement, progress: Progress
) -> HardwareSpec | None:
    """The peaks to score against: given, measured (``--calibrate``), or None — the spec of
    ``--device``, else of the device the workload runs on (``analyze_workload`` finds it)."""
    from ..hardware.spec import HardwareSpec

    if args.peak_flops is not None and args.memory_bandwidth is not None:
        kind = measurement.device_kind if measurement.device_kind in ("cpu", "gpu", "tpu") else "unknown"
        return HardwareSpec("user-supplied peaks", args.peak_flops, args.memory_bandwidth, kind=kind)
    if args.calibrate:
        progress.stage("calibrating")
        spec, _ = adapter.calibrate(args.device)
        return spec
    return None


def _check_outputs(args: argparse.Namespace) -> None:
    if (args.peak_flops is None) != (args.memory_bandwidth is None):
        raise NeuralCostError("--peak-flops and --memory-bandwidth go together; give both, or neither to detect")
    if args.calibrate and (args.peak_flops is not None or args.memory_bandwidth is not None):
        raise NeuralCostError(
            "--calibrate measures the peaks, --peak-flops/--memory-bandwidth give them; pass one or the other"
        )
    if args.plot:
        import importlib.util

        from ..report.plot import FORMATS

        suffix = Path(args.plot).suffix.lower()
        if suffix not in FORMATS:
            raise NeuralCostError(
                f"--plot {args.plot}: ends in {suffix or 'no extension'!r}; name a {' or '.join(FORMATS)} file"
            )
        if importlib.util.find_spec("matplotlib") is None:
            raise NeuralCostError("--plot needs matplotlib, which is not installed: pip install 'neural-cost[plot]'")


def run_analyze(args: argparse.Namespace) -> int:
    _check_outputs(args)  # before any work: a bad --plot must not leave a report or a JSON behind
    progress = Progress(sys.stderr)  # one line redrawn on a terminal; nothing when stderr is piped
    try:
        report = _analyzed(args, progress)
    except BaseException:
        progress.close()  # the error line then starts on a line of its own
        raise
    progress.close("done")
    return _print_report(args, report)


def _analyzed(args: argparse.Namespace, progress: Progress) -> GapReport:
    from ..analysis.workload import analyze_workload, time_workload
    from ..hardware.wake import cross_core_wake
    from ..measure.timing import before_timing, reporting_progress

    progress.stage(f"loading {Path(args.target.rpartition(':')[0]).name}")
    build = load_build(args.target)
    workload = build_workload(build)
    fn, inputs, kwargs = workload.fn, workload.args, workload.kwargs
    framework = chosen_framework(args.framework, fn, inputs, kwargs)  # a mismatch fails before tracing
    adapter = _adapter(framework, args)
    training = training_options(workload, adapter, framework)  # PyTorch's training/loss_fn/optimizer
    with exits_reported("the workload", WORKLOAD_ADVICE):
        adapter.workload_options(fn, inputs, kwargs)  # a workload that cannot run fails before it is timed
        progress.stage("compiling" if adapter.compiles_when_timing else "first run")
        befores: list[float | None] = []  # the host's state just before the timed runs (with --expected)
        reading = before_timing(lambda: befores.append(cross_core_wake())) if args.expected else nullcontext()
        with reporting_progress(progress.runs), reading:
            measurement = time_workload(
                adapter, fn, inputs, kwargs, warmup=args.warmup, repeats=args.repeats, options=training,
                warm_seconds=getattr(args, "warm_seconds", 0.0),
            )  # fmt: skip
        wake = cross_core_wake() if args.expected else None  # and just after them
        hardware = _hardware(args, adapter, measurement, progress)
        spec = hardware
        if args.expected and spec is None:  # the device the expectation is checked against
            spec = adapter.hardware(args.device or adapter.device_of(fn, inputs, kwargs))
        # the calibration, the floor and the drift probes run on an adapter of their own: their
        # programs would push the timed executable out of this one's cache (JAX keeps four), and
        # the trace below reads its kernels from it
        calibration, floor, floor_note = _expectation(
            args, build, _adapter(framework, args), framework, training, progress, workload, spec
        )
        progress.stage("tracing")  # and then, with --profile, the profiled runs
        return analyze_workload(
            adapter,
            fn,
            inputs,
            kwargs,
            hardware,
            device=args.device,
            measurement=measurement,
            trace_options=training,
            profile=args.profile,
            profile_runs=args.profile_runs,
            calibration=calibration,
            floor_seconds=floor,
            floor_note=floor_note,
            wake_seconds=wake,
            wake_before=befores[-1] if befores else None,
        )


def _expectation(
    args: argparse.Namespace,
    build: Any,
    adapter: FrameworkAdapter,
    framework: str,
    training: dict[str, Any],
    progress: Progress,
    workload: Any,
    hardware: Any,
) -> tuple[Any, float | None, str | None]:
    """With ``--expected``: this machine's kernel model (calibrated the first time) and the
    framework floor from a batch-1 run when ``build`` takes ``batch`` (else none, said in the report)."""
    if not getattr(args, "expected", False):
        return None, None, None
    from ..analysis.calibrate_kernels import kernel_calibration
    from .predict import measure_floor

    def step(done: int, total: int, name: str) -> None:
        progress.stage(f"calibrating {framework} kernels {done + 1}/{total}")

    calibration = kernel_calibration(adapter, progress=step)
    floor, note = measure_floor(build, workload, adapter, calibration, training, progress, False, hardware)
    return calibration, floor, note


def _print_report(args: argparse.Namespace, report: GapReport) -> int:
    from .output import write_json

    print(report.render(top=args.top, by=args.by), end="")
    if args.json:
        print(f"wrote {write_json(args.json, report.to_dict())}")
    if args.plot:  # a roofline of operations, or of scopes with --by scope (kernels sit at several levels)
        report.plot(args.plot, top=args.top, group_by_scope=args.by == "scope")
        print(f"wrote {args.plot}")
    if args.trace_out:
        print(f"wrote {write_trace_out(args.trace_out, report)}")
    failed = [
        below
        for below in (
            None if args.min_coverage is None else _below_gate(report, args.min_coverage),
            None if args.min_time_coverage is None else below_time_gate(report, args.min_time_coverage),
        )
        if below is not None
    ]
    for below in failed:
        print(f"neural-cost: {below}", file=sys.stderr)
    return 1 if failed else 0


def write_trace_out(path: str, report: GapReport) -> str:
    """``--trace-out PATH``: the profiled kernels as a Chrome/Perfetto trace; a clear error without a profile."""
    from ..report.trace_out import write_trace

    try:
        return str(write_trace(report, path))
    except NeuralCostError as error:
        raise NeuralCostError(f"--trace-out {path}: {error}") from error


def below_time_gate(report: GapReport, minimum: float) -> str | None:
    """Why ``--min-time-coverage`` fails, or None; a NeuralCostError (exit 2) when no time coverage was
    measured: a gate that cannot be evaluated must not pass."""
    from ..analysis.suspects import percent_down

    coverage = report.time_coverage
    fraction = coverage.fraction if coverage is not None else None
    if coverage is None or fraction is None:
        why = "; ".join(report.profile_notes) or (
            "the profiled pass matched no event to a kernel" if coverage is not None else "the report has no profile"
        )
        raise NeuralCostError(
            f"--min-time-coverage {minimum:.1%}: no time coverage was measured, so it cannot gate ({why}); "
            f"analyze with the profiler on (--profile, the default) and a framework whose adapter profiles"
        )
    if fraction >= minimum:
        return None
    message = f"time coverage {percent_down(fraction)} is below --min-time-coverage {minimum:.1%}"
    if coverage.unmodeled and coverage.kernel_seconds > 0:
        name, seconds = coverage.unmodeled[0]
        message += f"; the unmodeled operation with the most time is {name} ({seconds / coverage.kernel_seconds:.1%})"
    return message


def _below_gate(report: GapReport, minimum: float) -> str | None:
    """Why ``--min-coverage`` fails, or None: it gates on the lower of the operation share
    and the work share (when every unmodeled operation's size is known)."""
    from ..core.units import format_percent_down

    coverage = report.estimate.coverage
    figures = [("operations", coverage.modeled + coverage.free, coverage.total)]
    work = report.estimate.work_share
    if work is not None:
        figures.append(("work", *work))
    name, part, whole = min(figures, key=lambda f: f[1] / f[2] if f[2] else 1.0)
    if not whole or part / whole >= minimum:
        return None
    # the work share is a ceiling (unmodeled operations at their elementwise floor): "at most"
    at_most = "at most " if name == "work" else ""
    message = f"coverage ({name}) {at_most}{format_percent_down(part, whole)} is below --min-coverage {minimum:.1%}"
    if name == "work" and coverage.unmodeled_work:
        # the same order as the report's coverage line: most bytes moved first
        largest = max(coverage.unmodeled_work, key=lambda entry: (entry[2], entry[1]))[0]
        message += f"; the largest unmodeled operation is {largest}"
    return message


def run_diff(args: argparse.Namespace) -> int:
    from ..report.diff import diff_reports
    from ..report.load import read_report

    limit = args.max_bytes
    (before, version_before), (after, version_after) = (
        read_report(args.before, max_bytes=limit),
        read_report(args.after, max_bytes=limit),
    )
    print(diff_reports(before, after, top=args.top, versions=(version_before, version_after)), end="")
    return 0
