"""The text report says what it does not know, and never rounds coverage up."""

from __future__ import annotations

import subprocess
import sys

import pytest

from neural_cost import (
    Coverage,
    HardwareSpec,
    Measurement,
    NeuralCostError,
    Operation,
    TensorSpec,
    analyze_gap,
    benchmark,
    estimate_operations,
)
from neural_cost.analysis import presenter as presenter_slot
from tests.helpers import M3_PRO, cpu_measurement, seed_estimate

FIVE_RUNS = 5


def _matmul_program():
    # (64, 64) @ (64, 64) float32: 2·64·64·64 = 524,288 FLOPs, 49,152 B unfused and compulsory.
    op = Operation("mm", "matmul", ((64, 64), (64, 64)), (64, 64), scope="mm")
    boundary = [
        TensorSpec("x", (64, 64)),
        TensorSpec("w", (64, 64), role="parameter"),
        TensorSpec("y", (64, 64), role="output"),
    ]
    return estimate_operations([op], boundary=boundary)


def test_coverage_percent_is_rounded_down():
    # Was (report/text.py, analysis/findings.py): 9,999 of 10,000 modeled printed "100.0%", and
    # 89,996 of 100,000 printed "WARNING: only 90.0%" under a 90% threshold. Shown rounded down:
    # 99.99% → 99.9%, 89.996% → 89.9%.
    op = Operation("a", "elementwise", ((4,),), (4,), count=9_999)
    spec = HardwareSpec("c", 1e12, 1e11)
    run = Measurement((1e-3,) * FIVE_RUNS)
    coverage = Coverage(total=10_000, modeled=9_999, unmodeled=(("foo", 1),), unmodeled_work=(("foo", 0, 0),))
    report = analyze_gap(estimate_operations([op], coverage=coverage), run, spec)
    # foo is unmodeled, even at a floor of 0 FLOPs and 0 bytes: the work share is a ceiling, "≤ 100.0%"
    assert "coverage: operations 99.9% · work ≤ 100.0% (of 10,000 operations: modeled 9,999" in report.render()
    op = Operation("a", "elementwise", ((4,),), (4,), count=89_996)
    coverage = Coverage(total=100_000, modeled=89_996, unmodeled=(("foo", 10_004),))
    text = analyze_gap(estimate_operations([op], coverage=coverage), run, spec).render()
    assert "coverage: operations 89.9% · work unknown (of 100,000 operations: modeled 89,996" in text
    assert "WARNING: Low coverage: only 89.9% of the traced operations" in text
    # Work rounds down too: 4 float32 elementwise ops of 4 elements modeled = 4·(16 + 16) = 128 bytes, 16 FLOPs;
    # one unmodeled op at 1 FLOP and 0 bytes: FLOP share 16/17 = 94.1%, byte share 128/128 → work 94.1%.
    op = Operation("a", "elementwise", ((4,),), (4,), count=4)
    coverage = Coverage(total=5, modeled=4, unmodeled=(("foo", 1),), unmodeled_work=(("foo", 1, 0),))
    text = analyze_gap(estimate_operations([op], coverage=coverage), run, spec).render()
    assert "coverage: operations 80.0% · work ≤ 94.1% (of 5 operations: modeled 4, free 0, unmodeled 1: foo x1)" in text


def test_an_assumed_device_is_shown_as_an_assumption():
    # Was (measure/timing.py, report/text.py): a function called with no array arguments (a closure
    # over device arrays, a jitted function taking none) was recorded as "ran on <host CPU> (cpu)" with
    # the assumption hidden in device_source, which the report never printed; against a GPU spec it
    # then asserted a Device mismatch as fact.
    m = benchmark(lambda: None, warmup=0, repeats=FIVE_RUNS)
    assert m.device_kind == "cpu" and m.device_source.startswith("assumed")
    gpu = HardwareSpec("H100", 67e12, 3.35e12, kind="gpu")
    report = analyze_gap(_matmul_program(), Measurement((1e-3,) * FIVE_RUNS, "host", "cpu", m.device_source), gpu)
    rendered = report.render()
    assert "device: ran on host (cpu) [assumed: no array arguments" in rendered
    assert "Device mismatch: the work ran on a cpu (host, assumed: nothing said where it ran)" in rendered


def test_rendering_without_a_presenter_is_a_clear_error(monkeypatch):
    # analysis never imports report: with the slot empty, render/to_dict/plot say what to import.
    report = analyze_gap(seed_estimate(), cpu_measurement(), M3_PRO)
    monkeypatch.setattr(presenter_slot, "_slot", [])
    for call, name in ((report.render, "GapReport.render"), (report.to_dict, "GapReport.to_dict")):
        with pytest.raises(NeuralCostError, match=rf"{name}: no presenter is registered.*import neural_cost.report"):
            call()
    with pytest.raises(NeuralCostError, match=r"GapReport.plot: no presenter"):
        report.plot()


def test_importing_an_analysis_module_fills_the_presenter_slot():
    # Python runs the package root before any submodule, and the root imports report: a user who
    # imports only GapReport can still render it.
    code = (
        "import sys\n"
        "from neural_cost.analysis.gap import GapReport\n"
        "from neural_cost.analysis.presenter import presenter\n"
        "assert 'neural_cost.report' in sys.modules\n"
        "print(type(presenter('check')).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "ReportPresenter\n"


def test_work_coverage_is_printed_as_a_ceiling_when_anything_is_unmodeled():
    # Was (report/text.py): "work 60.0%", as if measured. An unmodeled op is sized at its elementwise
    # floor, the least it can do (a (64, 64) matrix_exp runs ~10 matmuls, sized here at 4,096 FLOPs),
    # so the modeled share is at most the figure.
    #   mm (64, 64) @ (64, 64) float32: 2·64³ = 524,288 FLOPs, 4·3·4,096 = 49,152 bytes
    #   matrix_exp at its floor: 4,096 FLOPs, 4·(4,096 + 4,096) = 32,768 bytes
    #   FLOP share 524,288 / 528,384 = 99.2%; byte share 49,152 / 81,920 = 60.0% → work ≤ 60.0%
    op = Operation("mm", "matmul", ((64, 64), (64, 64)), (64, 64))
    coverage = Coverage(
        total=2, modeled=1, unmodeled=(("matrix_exp", 1),), unmodeled_work=(("matrix_exp", 4_096, 32_768),)
    )
    report = analyze_gap(estimate_operations([op], coverage=coverage), cpu_measurement(), M3_PRO)
    lines = report.render().splitlines()
    assert lines[1] == (
        "  coverage: operations 50.0% · work ≤ 60.0% (of 2 operations: modeled 1, free 0, unmodeled 1: matrix_exp x1)"
    )
    assert lines[2] == (
        "  WARNING: Low coverage: only 50.0% of the traced operations were modeled or free; at most 60.0% of the "
        "work (FLOPs and bytes, unmodeled operations at their elementwise floor, the least they can do) is in "
        "modeled operations; the roofline bound and efficiency describe part of the workload, not all of it."
    )
    # Nothing unmodeled: the figure is exact, "work 100.0%" without ≤.
    full = analyze_gap(estimate_operations([op]), cpu_measurement(), M3_PRO).render().splitlines()[1]
    assert full == "  coverage: operations 100.0% · work 100.0% (of 1 operation: modeled 1, free 0)"


def _int32_device_line(spec: HardwareSpec, *more: Operation) -> str:
    # 1,000 int32 adds (1 FLOP each), then ``more``: the device line prints each dtype's peak.
    add = Operation("add", "elementwise", ((1000,), (1000,)), (1000,), "int32")
    report = analyze_gap(estimate_operations([add, *more]), cpu_measurement(), spec)
    return next(line for line in report.render().splitlines() if "device:" in line)


def test_a_dtype_without_a_peak_of_its_own_cites_the_peak_that_scored_it():
    # Was (hardware/spec.py source_of, report/text.py): "int32 332 GFLOP/s, no int32 peak of its own:
    # peak_flops (formula ...; bandwidth measured ...)": the spec-wide source, bandwidth's method included.
    # A host spec's fallback peak_flops is its float32 peak: int32 is scored at it and cites its formula.
    host = HardwareSpec(
        "AMD EPYC",
        332e9,
        39.8e9,
        kind="cpu",
        peak_flops_by_dtype={"float32": 332e9, "float64": 166e9},
        source="formula: 2 cores × 2.6 GHz × 64 FP32 FLOP/cycle; bandwidth measured, best of 36",
        sources={
            "peak_flops[float32]": "formula: 2 cores × 2.6 GHz × 64 FP32 FLOP/cycle",
            "peak_flops[float64]": "formula: 2 cores × 2.6 GHz × 32 FP64 FLOP/cycle",
            "memory_bandwidth": "measured, best of 36",
        },
    )
    assert host.fallback_dtype() == "float32"
    assert host.source_of("peak_flops[int32]") == "formula: 2 cores × 2.6 GHz × 64 FP32 FLOP/cycle"
    assert _int32_device_line(host) == (
        "  device: ran on Intel Xeon Platinum 8480C (cpu) · peaks for AMD EPYC (cpu): int32 332 GFLOP/s scored "
        "at the float32 peak (no int32 peak of its own; formula: 2 cores × 2.6 GHz × 64 FP32 FLOP/cycle); "
        "bandwidth 39.8 GB/s (measured, best of 36)"
    )
    # The float32 peak on the line too (examples/train_jax.py): its source is given there, once.
    mm = Operation("mm", "matmul", ((8, 8), (8, 8)), (8, 8), "float32")
    assert _int32_device_line(host, mm) == (
        "  device: ran on Intel Xeon Platinum 8480C (cpu) · peaks for AMD EPYC (cpu): float32 332 GFLOP/s "
        "(formula: 2 cores × 2.6 GHz × 64 FP32 FLOP/cycle); int32 332 GFLOP/s scored at the float32 peak (no "
        "int32 peak of its own); bandwidth 39.8 GB/s (measured, best of 36)"
    )
    # A spec that cites peak_flops itself is cited by that entry.
    cited = HardwareSpec("c", 332e9, 39.8e9, peak_flops_by_dtype={"float32": 332e9}, sources={"peak_flops": "table"})
    assert cited.source_of("peak_flops[int32]") == "table"
    # No own peak equals the fallback: the dtype is scored at the default peak_flops; one source, said once.
    table = HardwareSpec("X", 100e9, 10e9, kind="cpu", peak_flops_by_dtype={"float16": 200e9}, source="table")
    assert table.fallback_dtype() is None and table.source_of("peak_flops[int32]") == "table"
    assert _int32_device_line(table) == (
        "  device: ran on Intel Xeon Platinum 8480C (cpu) · peaks for X (cpu; table): int32 100 GFLOP/s scored "
        "at the default peak_flops (no int32 peak of its own); bandwidth 10.0 GB/s"
    )
