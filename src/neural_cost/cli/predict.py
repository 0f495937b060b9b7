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
from pathlib import Path
from typing import Any

from ..core.errors import NeuralCostError
from .build import build_workload, check_spec, chosen_framework, load_build, takes_batch, training_options
from .exits import WORKLOAD_ADVICE, exits_reported
from .progress import Progress


def _calibration(framework: str, path: str | None, progress: Progress, recalibrate: bool = False) -> Any:
    from ..adapters import adapter_for
    from ..analysis.calibrate_kernels import kernel_calibration
    from ..hardware.kernel_model import load_calibration

    if path is not None:
        return load_calibration(Path(path))
    progress.stage(f"{framework} kernel model")

    def step(done: int, total: int, name: str) -> None:
        progress.stage(f"calibrating {framework} kernels {done + 1}/{total}")

    return kernel_calibration(adapter_for(framework), recalibrate=recalibrate, progress=step)


def run_predict(args: argparse.Namespace) -> int:
    from ..adapters import adapter_for
    from ..analysis.expected import expected_time
    from ..analysis.workload import framework_floor, trace_workload
    from ..core.units import format_seconds, plural
    from ..costs.estimate import estimate_trace
    from ..report.expected_text import expected_line, expected_table, flag_lines
    from .output import write_json

    check_spec(args.target)
    progress = Progress(sys.stderr)
    try:
        build = load_build(args.target)
        workload = build_workload(build, args.batch)
        framework = chosen_framework(args.framework, workload.fn, workload.args, workload.kwargs)
        options: dict[str, Any] = {"cross_check": True} if framework == "jax" else {}
        adapter = adapter_for(framework, **options)  # JAX: compiled (not run) for its kernels
        training = training_options(workload, adapter, framework)
        calibration = _calibration(framework, args.calibration, progress)
        progress.stage("tracing")
        with exits_reported("the workload", WORKLOAD_ADVICE):
            trace = trace_workload(adapter, workload.fn, workload.args, workload.kwargs, training)
        floor, floor_note = None, "no framework floor: build() takes no batch argument to run it at batch 1"
        if args.no_floor:
            floor_note = "no framework floor (--no-floor)"
        elif takes_batch(build):
            progress.stage("framework floor (a batch-1 run)")
            tiny = build_workload(build, 1)
            with exits_reported("the batch-1 run", WORKLOAD_ADVICE):
                measured = framework_floor(
                    adapter_for(framework), tiny.fn, tiny.args, tiny.kwargs, calibration,
                    trace_options=training, benchmark_options=training,
                )  # fmt: skip
            floor, floor_note = measured.seconds, measured.note()
        expected = expected_time(estimate_trace(trace), calibration, floor)
    except BaseException:
        progress.close()
        raise
    progress.close("done")
    batch = f", batch {args.batch} (build(batch={args.batch}))" if args.batch is not None else ""
    lines = [
        f"program: {args.target} ({framework}){batch}: {plural(len(expected.rows), 'kernels')} traced, not timed",
        *flag_lines(expected),
        f"calibration: {calibration.framework} kernels on {calibration.hardware.name}, {calibration.date or 'undated'}"
        + ("" if args.calibration is None else f" (from {args.calibration})"),
        floor_note,
        expected_line(expected),
        f"kernels: {format_seconds(expected.kernel_seconds)} expected, "
        f"{format_seconds(sum(row.bound_seconds for row in expected.rows))} at their roofline bound",
        *[f"note: {note}" for note in expected.notes],
        *expected_table(expected, args.top),
    ]
    print("neural-cost predict\n" + "".join(f"  {line}\n" for line in lines), end="")
    if args.json:
        print(f"wrote {write_json(args.json, {'expected': expected.to_dict(), 'floor_note': floor_note})}")
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
        calibration = _calibration(args.framework, None, progress, recalibrate=True)
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
