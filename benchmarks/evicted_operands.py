"""Do evicted operands hold on kernels the calibration never saw? (``analysis/kernel_extras.py``)

For each held-out eager PyTorch model and batch asked for, the workload is timed and profiled once
(``analyze_workload``); every memory-bound kernel (its roofline memory time at least its compute time) and every
product and attention call (``REUSED_GRID``, whose grid reuses its operands) is scored twice from the same trace
and profile: as the expected time reads it, with the regions its level no longer holds at the calibration's cost of
an evicted byte (``Kernel.reuse``), and as it read them before, with the reuse taken out of the trace
(``without_reuse``). The summary gives, for both, the median |log(expected ÷ profiled)| over those kernels,
the time-weighted mean |expected ÷ profiled − 1|, and the kernels' and the whole program's expected time beside
the observed one. Figures, not a test: it exits 0.

Run it with the allocator keeping its pages, so that no result lands on fresh pages (a fault is not the kernel's
time), on a calibrated machine (the first use calibrates); the transformers need
``pip install -r requirements/bench.txt``:

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184 \\
        .venv/bin/python benchmarks/evicted_operands.py [--runs gpt2:4,bert:4,llama:4]
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from heldout_models import BY_NAME, compare_main

from neural_cost.adapters import adapter_for
from neural_cost.analysis.calibrate_kernels import kernel_calibration
from neural_cost.analysis.expected import expected_time
from neural_cost.analysis.kernel_extras import REUSED_GRID
from neural_cost.analysis.workload import analyze_workload
from neural_cost.core.estimate import CostEstimate


def without_reuse(estimate: CostEstimate) -> CostEstimate:
    """``estimate`` with no kernel saying how far back its memory was in use: the expected time before evicted
    operands."""
    return replace(estimate, kernels=tuple(replace(kernel, reuse=()) for kernel in estimate.kernels))


def compare(name: str, batch: int) -> list[tuple[float, float, float]]:
    """(evicted ÷ profiled, before ÷ profiled, profiled seconds) of each memory-bound kernel, product and attention
    call of one profiled run."""
    model = BY_NAME[name]
    adapter = adapter_for(model.framework)
    calibration = kernel_calibration(adapter)
    fn, args, kwargs, trace_options = model.build(batch)
    report = analyze_workload(
        adapter, fn, args, kwargs, warmup=5, repeats=10, trace_options=trace_options, profile=True, profile_runs=5
    )
    memory_bound = {
        r.index for r in report.kernel_rows if r.index is not None and r.memory_seconds >= r.compute_seconds
    }
    measured = {r.index: r.measured_seconds for r in report.kernel_rows if r.index is not None and r.measured_seconds}
    expected: list[Any] = [
        expected_time(estimate, calibration, 0.0, machine={}).with_measured(measured)
        for estimate in (report.estimate, without_reuse(report.estimate))
    ]
    before = {(row.name, row.index): row for row in expected[1].rows}
    found = [
        (row.seconds / row.measured_seconds, before[(row.name, row.index)].seconds / row.measured_seconds,
         row.measured_seconds)
        for row in expected[0].rows
        if row.measured_seconds and (row.index in memory_bound or row.kernel_class.split("@")[0] in REUSED_GRID)
    ]  # fmt: skip
    kernels = sum(seconds for *_, seconds in found)
    print(
        f"{name} b{batch}: observed {report.observed_seconds * 1e3:.3f} ms; kernels expected "
        f"{expected[0].kernel_seconds * 1e3:.3f} ms (evicted operands) / {expected[1].kernel_seconds * 1e3:.3f} ms "
        f"(before); its {len(found)} memory-bound kernels, products and attention calls: profiled "
        f"{kernels * 1e3:.3f} ms, expected "
        f"{sum(r[0] * r[2] for r in found) * 1e3:.3f} / {sum(r[1] * r[2] for r in found) * 1e3:.3f} ms"
    )
    return found


if __name__ == "__main__":
    compare_main(
        __doc__,
        "gpt2:4,bert:4,llama:4,gpt2:16,bert:16,llama:16",
        compare,
        ("evicted operands", "before"),
        "memory-bound kernels, products and attention calls",
        framework="torch",
    )
