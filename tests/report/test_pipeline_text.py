"""The pipeline table (report/pipeline_text.py): rows, partial sums, and coverage rounded down."""

from __future__ import annotations

from neural_cost import Coverage, HardwareSpec, Operation, Trace
from neural_cost.adapters import FrameworkAdapter
from neural_cost.analysis.pipeline import Pipeline, Stage
from neural_cost.report import render_pipeline

SPEC = HardwareSpec("chip", 1e12, 1e11, kind="cpu")


class _AlmostCovered(FrameworkAdapter):
    """9,999 of 10,000 operations modeled: 99.99% coverage."""

    def trace(self, model, inputs, **kwargs):
        op = Operation("step", "elementwise", ((1000,),), (1000,))
        return Trace((op,), Coverage(total=10_000, modeled=9_999, unmodeled=(("gather", 1),)))


def test_pipeline_coverage_column_is_rounded_down():
    # Was (PipelineReport.render): 9,999 of 10,000 ops modeled printed as "100.0%" coverage
    # (format_percent rounds up); the single-report header says 99.9%. Right: "99.9%".
    report = Pipeline({"s": Stage(lambda: None)}).run(adapter=_AlmostCovered(), hardware=SPEC, warmup=0, repeats=1)
    row = next(line for line in report.render().splitlines() if line.strip().startswith("s "))
    # operations · work: the hand-built coverage records no unmodeled sizes, so work is unknown
    assert row.rstrip().endswith("99.9% · unknown") and "100.0%" not in row


def test_pipeline_with_a_failed_stage_says_its_sum_is_partial():
    # Was (PipelineReport.render): with one stage failed, "stages: 1.000 ms per pipeline run"
    # presented the sum of the stages that ran as the pipeline's. Right: it says a stage is missing.
    clock_now = [0.0]

    def tick():
        clock_now[0] += 0.001

    def broken():
        raise RuntimeError("diverged")

    report = Pipeline({"ok": Stage(tick), "bad": Stage(broken)}).run(warmup=0, repeats=1, clock=lambda: clock_now[0])
    line = next(line for line in report.render().splitlines() if line.strip().startswith("stages:"))
    assert "1 failed" in line and "not included" in line


def test_pipeline_table_golden():
    # Each call of a stage advances the clock by its step, so one timed run takes exactly one step
    # (0.25 and 0.5 are exact in binary: no rounding residue). "a" 250 ms × 2 calls = 500 ms,
    # "b" 500 ms × 1 = 500 ms: stages 1.000 s, each 50.0% of the end-to-end run, which calls a, a, b:
    # 250 + 250 + 500 = 1.000 s, so unexplained = 1.000 − 1.000 = 0 s. No adapter: no bound, no coverage.
    now = [0.0]

    def step(seconds):
        def run():
            now[0] += seconds

        return run

    a, b = step(0.25), step(0.5)

    def whole():
        a()
        a()
        b()

    report = Pipeline({"a": Stage(a, calls=2), "b": Stage(b)}, total=Stage(whole)).run(
        warmup=0, repeats=1, clock=lambda: now[0]
    )
    text = report.render()
    assert text == render_pipeline(report)
    assert text == (
        "Neural cost pipeline analysis\n"
        "  stage  calls    per call  ± stdev     × calls  share  bound × calls  efficiency  coverage (ops · work)\n"
        "  a          2  250.000 ms      0 s  500.000 ms  50.0%              -           -                      -\n"
        "  b          1  500.000 ms      0 s  500.000 ms  50.0%              -           -                      -\n"
        "  stages: 1.000 s per pipeline run\n"
        "  end-to-end: 1.000 s (end-to-end)\n"
        "  unexplained: 0 s (0.0% of end-to-end) — time outside the stages: work between them, and Python dispatch "
        "and loop overhead where a run is not compiled\n"
    )


def test_control_characters_in_stage_names_and_errors_are_escaped():
    # A stage name or an exception message with an ANSI escape must not reach the terminal raw.
    def broken():
        raise RuntimeError("bad \x1b[2J")

    report = Pipeline({"\x1b[31mred": Stage(broken)}).run(warmup=0, repeats=1, clock=lambda: 0.0)
    text = report.render()
    assert "\x1b" not in text
    assert "\\x1b[31mred" in text and "\\x1b[2J" in text


def test_pipeline_peaks_line_prints_the_numbers_it_scored_with():
    # SPEC: 1e12 FLOP/s and 1e11 B/s; the one stage computes in float32 (an elementwise record)
    report = Pipeline({"s": Stage(lambda: None)}).run(adapter=_AlmostCovered(), hardware=SPEC, warmup=0, repeats=1)
    line = next(line for line in report.render().splitlines() if line.strip().startswith("peaks for"))
    assert "float32 1.00 TFLOP/s" in line and "bandwidth 100 GB/s" in line
