"""Pipeline.run on its stages' arguments and the framework that times them.

(Moved from tests/review/; these belong beside tests/analysis/test_pipeline.py, which another
change owns in this round: the lead may merge the two.)
"""

from __future__ import annotations

import time

import pytest

from neural_cost import HardwareSpec
from neural_cost.analysis.pipeline import Pipeline, Stage

SPEC = HardwareSpec("chip", 1e12, 1e11, kind="cpu")


def test_stage_kwargs_none_runs_the_stage():
    # Was: Stage(fn, args, kwargs=None) — the signature issue 7 documents — reported the stage as
    # "failed" (TypeError: argument after ** must be a mapping). Right: it runs.
    stage = Stage(lambda x: x + 1, (1,), kwargs=None)
    report = Pipeline({"add": stage}).run(warmup=0, repeats=1)
    assert report.stages[0].error is None
    with pytest.raises(Exception, match="kwargs"):
        Stage(lambda x: x, (1,), kwargs=[("a", 1)])


def test_torch_stage_is_timed_with_its_kwargs():
    # Was: a PyTorch stage with kwargs was timed as TorchAdapter.benchmark(fn, *args, scale=2.0) —
    # TorchAdapter takes kwargs=, so every such stage was reported "failed" while it runs fine.
    # Right: timed and traced with the same kwargs.
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


def _jax_search():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    step = jax.jit(lambda x: x * 2.0)

    def search(x):
        time.sleep(0.02)  # Python around the stages: runs once per call as written, once at trace time compiled
        for _ in range(4):
            x = step(x)
        return x

    return step, search, jnp.ones(1000)


def test_jax_end_to_end_is_compiled_like_its_stages():
    # Was (b5c081d): the end-to-end function ran uncompiled while its stages were compiled, so its
    # op-by-op Python execution read as "unexplained". Right: compiled like every stage, so the
    # 20 ms sleep in its Python runs once, while tracing, and is in no timed run.
    from neural_cost.adapters import JaxAdapter

    step, search, x = _jax_search()
    report = Pipeline({"step": Stage(step, (x,), calls=4)}, total=Stage(search, (x,))).run(
        adapter=JaxAdapter(cross_check=False), hardware=SPEC, warmup=1, repeats=2
    )
    assert report.total.error is None and report.total.notes == ()
    assert report.total.seconds_per_call < 0.02
    # compiled whole: x·2 four times, 4 × 1,000 FLOPs (XLA may fold them; our count is the program's)
    assert report.total.report.estimate.flops == 4000
    assert report.total.measurement.compile_seconds is not None


def test_jax_end_to_end_with_jit_false_keeps_its_python_overhead():
    from neural_cost.adapters import JaxAdapter

    step, search, x = _jax_search()
    report = Pipeline({"step": Stage(step, (x,), calls=4)}, total=Stage(search, (x,), jit=False)).run(
        adapter=JaxAdapter(cross_check=False), hardware=SPEC, warmup=1, repeats=2
    )
    assert report.total.error is None
    assert report.total.seconds_per_call >= 0.02  # the sleep, in every timed run
    assert report.total.measurement.compile_seconds is None  # the plain harness: nothing compiled
    assert report.unexplained_seconds is not None and report.unexplained_seconds > 0.015


def test_jax_function_that_cannot_be_jitted_is_timed_as_written_with_a_note():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from neural_cost.adapters import JaxAdapter

    step = jax.jit(lambda x: x * 2.0)

    def search(x):
        while float(x.sum()) < 8000.0:  # Python branching on an array's value: no tracer can take it
            x = step(x)
        return x

    x = jnp.ones(1000)
    report = Pipeline({"step": Stage(step, (x,), calls=3)}, total=Stage(search, (x,))).run(
        adapter=JaxAdapter(cross_check=False), hardware=SPEC, warmup=1, repeats=2
    )
    assert report.total.error is None and report.total.seconds_per_call > 0
    assert report.total.notes[0].startswith("not compiled (JaxAdapter.benchmark: compiling ")
    assert report.total.notes[0].endswith("): timed as written, op by op")
    assert report.total.notes[1].startswith("not traced: AdapterError: JaxAdapter.trace: tracing ")
    assert report.unexplained_seconds is not None
    assert "  end-to-end: not compiled (" in report.render()
