"""``neural-cost predict FILE.py:build [--batch N] [--calibration FILE]``: the expected time
of a program from its trace alone, and ``neural-cost calibrate --kernels``: the model it uses.

``predict`` traces the program (a JAX program is compiled, not run, for its kernels), reads
the kernel model of this machine (calibrating it the first time, or the file given) and prints
the expected time with its basis: the calibration (machine, date, framework version, its own
cross-validated error), the framework floor (one batch-1 run of the same program, when
``build`` takes ``batch``), and the kernels with the most expected time. A calibration from
another machine, framework or version is flagged in the header, never silently used.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import NeuralCostError
from .build import build_workload, check_spec, chosen_framework, load_build, takes_batch, training_options
from .exits import WORKLOAD_ADVICE, exits_reported
from .progress import Progress


def _calibration(
    framework: str, path: str | None, progress: Progress, recalibrate: bool = False, fresh: bool = False
) -> Any:
    from ..adapters import adapter_for
    from ..analysis.calibrate_kernels import kernel_calibration
    from ..hardware.kernel_model import load_calibration

    if path is not None:
        return load_calibration(Path(path))
    progress.stage(f"{framework} kernel model")

    def step(done: int, total: int, name: str) -> None:
        progress.stage(f"calibrating {framework} kernels {done + 1}/{total}")

    return kernel_calibration(adapter_for(framework), recalibrate=recalibrate, fresh=fresh, progress=step)


def measure_floor(
    build: Any,
    workload: Any,
    adapter: Any,
    calibration: Any,
    training: dict[str, Any],
    progress: Progress,
    skip: bool,
    hardware: Any,
) -> tuple[float | None, str]:
    """The framework floor from a batch-1 run of ``build`` and how it was obtained — or None and
    why not: asked not to, ``build`` takes no batch, the calibration is another device's (its
    kernels are not this machine's: a floor measured here would mix the two), the program is
    already at batch 1 (its floor would be its own time), or the batch-1 run failed. Unless asked
    not to or calibrated elsewhere, the note also says how fast the machine runs a few calibration
    points now (``machine_drift``), floor or none: the expectation is of the machine as calibrated,
    and a program whose ``build`` takes no batch has loops that run slow now as much as any."""
    from ..analysis.drift import machine_drift
    from ..analysis.expected import calibration_flags

    if skip:
        return None, "no framework floor (--no-floor): the expected time is the kernels' alone"
    batched = takes_batch(build)
    if calibration_flags(calibration, adapter.framework, None, hardware):
        if not batched:
            return None, "no framework floor: build() takes no batch argument to run it at batch 1"
        return None, "no framework floor: the calibration is not this machine's (flagged above); its kernels only"
    progress.stage("machine drift (the calibration's probes re-run)")
    try:  # before the batch-1 run: its time is taken at the machine's calibrated speed (``Floor.drift``)
        drift, failed = machine_drift(adapter, calibration), None
    except Exception as error:  # a probe is an extra: its failure is said, never fatal
        drift, failed = None, f"machine drift not measured ({type(error).__name__})"
    if batched:
        progress.stage("framework floor (a batch-1 run)")
        ratio = None if drift is None else drift.ratio
        floor, note = _batch_one(build, workload, adapter, calibration, training, ratio)
    else:
        floor, note = None, "no framework floor: build() takes no batch argument to run it at batch 1"
    if failed is not None:
        return floor, f"{note}; {failed}"
    return floor, note if drift is None else f"{note}; {drift.note()}"


def _batch_one(
    build: Any, workload: Any, adapter: Any, calibration: Any, training: dict[str, Any], drift: float | None
) -> tuple[float | None, str]:
    """``measure_floor``'s batch-1 run: the floor and its note, or None and why not. ``drift``: the machine's
    speed against its calibration just before (``Floor.drift``)."""
    from ..adapters.base import example_input_shapes
    from ..analysis.workload import framework_floor

    try:
        tiny = build_workload(build, 1)
        shapes = [example_input_shapes(w.args) + example_input_shapes(w.kwargs) for w in (tiny, workload)]
        if shapes[0] and shapes[0] == shapes[1]:  # no array input says nothing: measure
            return None, "no framework floor: the program is at batch 1 already (its floor would be its own time)"
        measured = framework_floor(
            adapter, tiny.fn, tiny.args, tiny.kwargs, calibration, trace_options=training, benchmark_options=training,
            drift=drift,
        )  # fmt: skip
    except Exception as error:  # a model that cannot run at batch 1 (BatchNorm in training...)
        return None, f"no framework floor: the batch-1 run failed ({type(error).__name__}: {str(error)[:160]})"
    return measured.seconds, measured.note() + (
        " (clamped at 0)" if measured.seconds == 0 and not measured.unknown else ""
    )


def _expectations(args: argparse.Namespace, progress: Progress) -> _Predicted:
    """Trace ``args.target`` at each batch asked (ascending; one workload built at a time), measure the floor once
    (at the largest batch's shapes) and the host's wake-up once, and score each trace on one calibration."""
    from ..adapters import adapter_for
    from ..analysis.expected import expected_time
    from ..analysis.usual_loops import loops_now
    from ..analysis.workload import trace_workload
    from ..costs.estimate import estimate_trace
    from ..hardware.wake import cross_core_wake

    build = load_build(args.target)
    batches: tuple[int | None, ...] = args.batch or (None,)
    estimates, trace_notes = [], []
    framework = adapter = calibration = workload = training = None
    for batch in batches:
        try:
            workload = build_workload(build, batch)
        except NeuralCostError as error:  # which batch of a sweep failed: the others may build
            if len(batches) == 1:
                raise
            raise NeuralCostError(f"at batch {batch} (of {', '.join(map(str, batches))}): {error}") from error
        if adapter is None:
            framework = chosen_framework(args.framework, workload.fn, workload.args, workload.kwargs)
            options: dict[str, Any] = {"cross_check": True} if framework == "jax" else {}
            adapter = adapter_for(framework, **options)  # JAX: compiled (not run) for its kernels
        training = training_options(workload, adapter, framework or "")
        if calibration is None:
            calibration = _calibration(framework or "", args.calibration, progress)
        progress.stage("tracing" if len(batches) == 1 else f"tracing batch {batch}")
        with exits_reported("the workload" if len(batches) == 1 else f"the workload at batch {batch}", WORKLOAD_ADVICE):
            trace = trace_workload(adapter, workload.fn, workload.args, workload.kwargs, training)
        estimates.append(estimate_trace(trace))
        trace_notes.append(list(trace.notes))
    assert workload is not None and adapter is not None and framework is not None and training is not None
    assert calibration is not None
    hardware = adapter.hardware(adapter.device_of(workload.fn, workload.args, workload.kwargs))
    floor, floor_note = measure_floor(
        build, workload, adapter_for(framework), calibration, training, progress, args.no_floor, hardware
    )
    wake = cross_core_wake()  # the host's state now
    expecteds = []
    for estimate in estimates:
        expected = expected_time(estimate, calibration, floor, hardware=hardware, floor_note=floor_note)
        expecteds.append(loops_now(expected, calibration.loop_wakes, wake))
    return _Predicted(framework, calibration, floor_note, tuple(expecteds), tuple(trace_notes))


@dataclass(frozen=True)
class _Predicted:
    framework: str
    calibration: Any
    floor_note: str
    expecteds: tuple[Any, ...]  # one ``Expected`` per batch asked, in ascending order
    trace_notes: tuple[list[str], ...]


def run_predict(args: argparse.Namespace) -> int:
    from ..core.units import format_seconds, plural
    from ..report.expected_text import expected_line, expected_table, flag_lines, host_note, now_line, usual_line
    from ..report.text import trace_note_lines
    from .output import write_json

    check_spec(args.target)
    progress = Progress(sys.stderr)
    try:
        found = _expectations(args, progress)
    except BaseException:
        progress.close()
        raise
    progress.close("done")
    if args.batch is not None and len(args.batch) > 1:
        return _print_sweep(args, found)
    expected, calibration, framework = found.expecteds[0], found.calibration, found.framework
    batch = "" if args.batch is None else f", batch {args.batch[0]} (build(batch={args.batch[0]}))"
    lines = [
        f"program: {args.target} ({framework}){batch}: {plural(len(expected.rows), 'kernels')} traced, not timed",
        *flag_lines(expected),
        _calibration_line(args, calibration),
        expected_line(expected),
        *filter(None, [usual_line(expected), now_line(expected, when="just now")]),
        f"kernels: {format_seconds(expected.kernel_seconds)} expected, "
        f"{format_seconds(sum(row.bound_seconds for row in expected.rows))} at their roofline bound",
        *[f"note: {note}" for note in (*expected.notes, *filter(None, [host_note(expected, "just now")]))],
        *trace_note_lines(found.trace_notes[0]),
        *expected_table(expected, args.top),
    ]
    print("neural-cost predict\n" + "".join(f"  {line}\n" for line in lines), end="")
    if args.json:
        saved = {"expected": expected.to_dict(), "floor_note": found.floor_note, "trace_notes": found.trace_notes[0]}
        print(f"wrote {write_json(args.json, saved)}")
    return 0


def _calibration_line(args: argparse.Namespace, calibration: Any) -> str:
    return f"calibration: {calibration.framework} kernels on {calibration.hardware.name}, " + (
        f"{calibration.date or 'undated'}" + ("" if args.calibration is None else f" (from {args.calibration})")
    )


def _print_sweep(args: argparse.Namespace, found: _Predicted) -> int:
    """``predict --batch 8,32,128``: the batches side by side (``report.sweep_text``), every batch's notes once;
    no kernel table (one ``--batch`` lists a batch's kernels). Batch 1 is where the floor is measured: its
    expected time holds that run's own time outside its kernels, said in a note."""
    from ..report.expected_text import flag_lines, host_note
    from ..report.sweep_text import sweep_notes, sweep_table, throughput_line
    from ..report.text import trace_note_lines
    from .output import write_json

    batches, expecteds = args.batch, found.expecteds
    first = expecteds[0]
    notes = sweep_notes(batches, [[*e.notes, *filter(None, [host_note(e, "just now")])] for e in expecteds])
    if batches[0] == 1 and first.floor_seconds:
        notes.append(
            "batch 1 is the batch the framework floor is measured at: its expected time holds that run's own time "
            "outside its kernels, not a prediction from its trace alone"
        )
    lines = [
        f"program: {args.target} ({found.framework}), batches {', '.join(map(str, batches))} (build(batch=N)): "
        "traced, not timed",
        *flag_lines(first),
        _calibration_line(args, found.calibration),
        f"expected by batch ({first.basis()}):",
        *[f"  {line}" for line in sweep_table(batches, expecteds)],
        *filter(None, [throughput_line(batches, expecteds)]),
        *[f"note: {note}" for note in notes],
        *trace_note_lines(sweep_notes(batches, found.trace_notes)),
    ]
    print("neural-cost predict\n" + "".join(f"  {line}\n" for line in lines), end="")
    if args.json:
        saved = {
            "batches": [
                {"batch": batch, "expected": expected.to_dict(), "trace_notes": notes}
                for batch, expected, notes in zip(batches, expecteds, found.trace_notes, strict=True)
            ],
            "floor_note": found.floor_note,
        }
        print(f"wrote {write_json(args.json, saved)}")
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    from ..analysis.calibrate_kernels import calibration_path
    from ..hardware.kernel_model import save_calibration
    from ..report.expected_text import calibration_lines

    if not args.kernels:
        raise NeuralCostError(
            "neural-cost calibrate measures the kernel model: pass --kernels (the device's peaks and bandwidths: "
            "neural-cost hardware --calibrate)"
        )
    progress = Progress(sys.stderr)
    try:
        calibration = _calibration(args.framework, None, progress, recalibrate=True, fresh=args.fresh)
    except BaseException:
        progress.close()
        raise
    progress.close("done")
    print(
        "neural-cost calibrate --kernels\n" + "".join(f"  {line}\n" for line in calibration_lines(calibration)), end=""
    )
    print(f"saved {calibration_path(args.framework)}")
    if args.json:
        save_calibration(calibration, Path(args.json))
        print(f"wrote {args.json}")
    return 0
