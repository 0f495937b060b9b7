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
    assert "coverage: operations 99.9% · work 100.0% (of 10,000 operations: modeled 9,999" in report.render()
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
    assert "coverage: operations 80.0% · work 94.1% (of 5 operations: modeled 4, free 0, unmodeled 1: foo x1)" in text


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
