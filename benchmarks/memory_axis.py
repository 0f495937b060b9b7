"""Does a pointwise class's memory axis hold on kernels the calibration never saw? (kernel model 43)

For each held-out model and batch asked for, the workload is timed and profiled once
(``analyze_workload``); every kernel read off a class that may take main memory's axis
(``kernel_model.main_memory_candidate``: ``elementwise``, the ``transcendental`` family) is
printed with its profiled time and its expected time ÷ that time twice, from the same profile:
on the axis the framework's calibration chose for its class (``ClassModel.memory_axis``), and
with every such class refitted on the level's axis from the same points (the model before 43).
The summary gives the median |log(expected ÷ profiled)| of both, and the time-weighted mean
|expected ÷ profiled − 1|. Figures, not a test: it exits 0.

Run it with the allocator keeping its pages, so that no result lands on fresh pages (a fault
is not the kernel's time), and on a calibrated machine (the first use calibrates); the transformers need
``pip install -r requirements/bench.txt``:

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184 \\
        .venv/bin/python benchmarks/memory_axis.py [--runs gpt2:4,bert:4,llama:4]
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from heldout_models import BY_NAME, compare_main

from neural_cost.adapters import adapter_for
from neural_cost.analysis.calibrate_kernels import kernel_calibration
from neural_cost.analysis.expected import expected_time
from neural_cost.analysis.workload import analyze_workload
from neural_cost.hardware.kernel_model import ClassModel, KernelCalibration, family, fit_class, main_memory_candidate


def on_level_axis(calibration: KernelCalibration) -> KernelCalibration:
    """``calibration`` with every class on main memory's axis refitted on the level's from its own points."""

    def refit(classes: dict[str, ClassModel], usual: bool) -> dict[str, ClassModel]:
        found = dict(classes)
        for name, model in classes.items():
            if model.memory_axis != "main":
                continue
            members = [p for p in calibration.points if name in (p.kernel_class, family(p.kernel_class))]
            if usual:
                members = [replace(p, measured_seconds=p.usual_seconds or p.measured_seconds) for p in members]
            again = fit_class(name, members, "level")
            if again is not None:
                found[name] = again
        return found

    return replace(
        calibration,
        classes=refit(dict(calibration.classes), False),
        usual_classes=refit(dict(calibration.usual_classes), True),
    )


def compare(name: str, batch: int) -> list[tuple[float, float, float]]:
    """(chosen ÷ profiled, level ÷ profiled, profiled seconds) of each pointwise kernel of one profiled run."""
    model = BY_NAME[name]
    adapter = adapter_for(model.framework)
    chosen = kernel_calibration(adapter)
    level = on_level_axis(chosen)
    fn, args, kwargs, trace_options = model.build(batch)
    report = analyze_workload(
        adapter, fn, args, kwargs, warmup=5, repeats=10, trace_options=trace_options, profile=True, profile_runs=5
    )
    measured = {r.index: r.measured_seconds for r in report.kernel_rows if r.index is not None and r.measured_seconds}
    expected: list[Any] = [
        expected_time(report.estimate, calibration, 0.0, machine={}).with_measured(measured)
        for calibration in (chosen, level)
    ]
    axis = {n: m.memory_axis for n, m in chosen.classes.items() if main_memory_candidate(n)}
    print(
        f"{name} b{batch}: observed {report.observed_seconds * 1e3:.3f} ms; kernels expected "
        f"{expected[0].kernel_seconds * 1e3:.3f} ms (chosen axes) / {expected[1].kernel_seconds * 1e3:.3f} ms "
        f"(level); axes: {', '.join(f'{n} {a}' for n, a in sorted(axis.items()))}"
    )
    on_level = {(row.name, row.index): row for row in expected[1].rows}
    found = []
    for row in expected[0].rows:
        seconds = row.measured_seconds
        if not seconds or not main_memory_candidate(row.kernel_class):
            continue
        other = on_level[(row.name, row.index)]
        found.append((row.seconds / seconds, other.seconds / seconds, seconds))
        print(
            f"  {row.name[:50]:50s} {row.kernel_class:22s} profiled {seconds * 1e6:8.1f} µs  "
            f"chosen {row.seconds / seconds:5.2f}×  level {other.seconds / seconds:5.2f}×"
        )
    return found


if __name__ == "__main__":
    compare_main(
        __doc__, "gpt2:4,bert:4,llama:4,gpt2:16,bert:16", compare, ("chosen axes", "level axis"), "pointwise kernels"
    )
