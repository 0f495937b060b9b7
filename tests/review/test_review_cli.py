"""Review of the pipeline, the CLI and saved reports: where a number could lie or a user be misled.

Each test names what lied and the number it should have shown.
"""

from __future__ import annotations

import textwrap
import time

import pytest

from neural_cost import Coverage, HardwareSpec, Operation, Trace
from neural_cost.adapters import FrameworkAdapter
from neural_cost.analysis.pipeline import Pipeline, Stage
from neural_cost.cli.main import main

SPEC = HardwareSpec("chip", 1e12, 1e11, kind="cpu")
FAST = ["--warmup", "0", "--repeats", "1", "--peak-flops", "1e11", "--memory-bandwidth", "1e10"]
JAX_SCRIPT = """
import jax.numpy as jnp

def build():
    return (lambda w, x: jnp.tanh(x @ w)), (jnp.ones((16, 8)), jnp.ones((4, 16)))
"""


def _script(tmp_path, text):
    path = tmp_path / "work.py"
    path.write_text(textwrap.dedent(text))
    return f"{path}:build"


def test_analyze_plot_to_an_unknown_extension_writes_nothing(tmp_path, capsys):
    # LIED (cli/analyze.py): `--json r.json --plot r.pdf` timed, printed the full report and wrote
    # r.json, and only then failed on the plot's extension — exit 2 with a complete-looking JSON left
    # behind. Right: one stderr line, exit 2, no report, no JSON, no plot.
    pytest.importorskip("jax")
    out, plot = tmp_path / "r.json", tmp_path / "r.pdf"
    code = main(["analyze", _script(tmp_path, JAX_SCRIPT), *FAST, "--json", str(out), "--plot", str(plot)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and ".pdf" in captured.err and "Traceback" not in captured.err
    assert not out.exists() and not plot.exists()
    assert list(tmp_path.iterdir()) == [tmp_path / "work.py"]


def test_analyze_refuses_calibrate_with_given_peaks(tmp_path, capsys):
    # LIED (cli/analyze.py): `--calibrate --peak-flops P --memory-bandwidth B` silently scored against
    # P and B; the user believed the peaks were measured. Right: a clear error, exit 2.
    pytest.importorskip("jax")
    code = main(["analyze", _script(tmp_path, JAX_SCRIPT), *FAST, "--calibrate"])
    assert code == 2
    assert "--calibrate" in capsys.readouterr().err


def test_stage_kwargs_none_runs_the_stage():
    # LIED (analysis/pipeline.py): Stage(fn, args, kwargs=None) — the signature issue 7 documents —
    # reported the stage as "failed" (TypeError: argument after ** must be a mapping). Right: it runs.
    stage = Stage(lambda x: x + 1, (1,), kwargs=None)
    report = Pipeline({"add": stage}).run(warmup=0, repeats=1)
    assert report.stages[0].error is None
    with pytest.raises(Exception, match="kwargs"):
        Stage(lambda x: x, (1,), kwargs=[("a", 1)])


def test_torch_stage_is_timed_with_its_kwargs():
    # LIED (analysis/pipeline.py): a PyTorch stage with kwargs was timed as
    # TorchAdapter.benchmark(fn, *args, scale=2.0) — TorchAdapter takes kwargs=, so every such stage
    # was reported "failed" while it runs fine. Right: timed and traced with the same kwargs.
    torch = pytest.importorskip("torch")
    from neural_cost.adapters import TorchAdapter

    seen = []

    def scaled(x, scale):
        seen.append(scale)
        return x * scale

    x = torch.ones(1000)
    report = Pipeline({"scale": Stage(scaled, (x,), kwargs={"scale": 2.0})}).run(
        adapter=TorchAdapter(), hardware=SPEC, warmup=0, repeats=2
    )
    assert report.stages[0].error is None
    assert report.stages[0].report is not None
    assert set(seen) == {2.0}
    # x * 2.0 on 1,000 float32 elements: 1,000 FLOPs
    assert report.stages[0].report.estimate.flops == 1000


class _AlmostCovered(FrameworkAdapter):
    """9,999 of 10,000 operations modeled: 99.99% coverage."""

    def trace(self, model, inputs, **kwargs):
        op = Operation("step", "elementwise", ((1000,),), (1000,))
        return Trace((op,), Coverage(total=10_000, modeled=9_999, unmodeled=(("gather", 1),)))


def test_pipeline_coverage_column_is_rounded_down():
    # LIED (analysis/pipeline.py render): 9,999 of 10,000 ops modeled printed as "100.0%" coverage
    # (format_percent rounds up); the single-report header says 99.9%. Right: "99.9%".
    report = Pipeline({"s": Stage(lambda: None)}).run(adapter=_AlmostCovered(), hardware=SPEC, warmup=0, repeats=1)
    row = next(line for line in report.render().splitlines() if line.strip().startswith("s "))
    assert row.rstrip().endswith("99.9%") and "100.0%" not in row


def test_pipeline_with_a_failed_stage_says_its_sum_is_partial():
    # LIED (analysis/pipeline.py render): with one stage failed, "stages: 1.000 ms per pipeline run"
    # presented the sum of the stages that ran as the pipeline's. Right: it says a stage is missing.
    clock_now = [0.0]

    def tick():
        clock_now[0] += 0.001

    def broken():
        raise RuntimeError("diverged")

    report = Pipeline({"ok": Stage(tick), "bad": Stage(broken)}).run(warmup=0, repeats=1, clock=lambda: clock_now[0])
    line = next(line for line in report.render().splitlines() if line.strip().startswith("stages:"))
    assert "1 failed" in line and "not included" in line


def test_jax_end_to_end_keeps_its_python_overhead():
    # LIED (analysis/pipeline.py): JaxAdapter.benchmark jit-compiles what it times, so the end-to-end
    # Python function (a loop calling jitted stages) was compiled into one XLA program: its Python
    # dispatch and loop overhead — exactly what "unexplained" claims to show — was never timed.
    # Here the end-to-end sleeps 20 ms in Python per run; the end-to-end time must be >= 20 ms
    # (it was ~µs: the sleep ran once, at trace time).
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from neural_cost.adapters import JaxAdapter

    step = jax.jit(lambda x: x * 2.0)

    def search(x):
        time.sleep(0.02)
        return step(x)

    x = jnp.ones(1000)
    report = Pipeline({"step": Stage(step, (x,))}, total=Stage(search, (x,))).run(
        adapter=JaxAdapter(cross_check=False), hardware=SPEC, warmup=1, repeats=2
    )
    assert report.total is not None and report.total.error is None
    assert report.total.seconds_per_call >= 0.02
    assert report.unexplained_seconds is not None and report.unexplained_seconds > 0.015
