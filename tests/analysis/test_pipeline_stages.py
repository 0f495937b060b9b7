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


def test_jax_end_to_end_keeps_its_python_overhead():
    # Was: JaxAdapter.benchmark jit-compiles what it times, so the end-to-end Python function (a loop
    # calling jitted stages) was compiled into one XLA program: its Python dispatch and loop overhead
    # — exactly what "unexplained" claims to show — was never timed. Here the end-to-end sleeps 20 ms
    # in Python per run; the end-to-end time must be >= 20 ms (it was ~µs: the sleep ran once, at
    # trace time).
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
