"""Pipelines: stages × calls against the end-to-end run, with an injected clock."""

import pytest

from neural_cost import AdapterError, Coverage, HardwareSpec, Operation, RecordError, Trace
from neural_cost.adapters import FrameworkAdapter
from neural_cost.analysis.pipeline import Pipeline, Stage

SPEC = HardwareSpec("chip", 1e12, 1e11, kind="cpu")


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def work(self, seconds, *, unmodeled=0, raises=False):
        def fn(*args):
            if raises:
                raise RuntimeError("environment step diverged")
            self.now += seconds

        fn.unmodeled = unmodeled
        return fn


class StageAdapter(FrameworkAdapter):
    """Each stage is one 1,000-element elementwise op, plus the unmodeled ops its fn says."""

    def trace(self, model, inputs, **kwargs):
        op = Operation("step", "elementwise", ((1000,),), (1000,))
        missing = getattr(model, "unmodeled", 0)
        return Trace((op,), Coverage(total=1 + missing, modeled=1, unmodeled=(("gather", missing),) if missing else ()))


def test_unexplained_equals_the_injected_overhead():
    clock = Clock()
    overhead = 0.004
    tree, env, net = clock.work(0.010), clock.work(0.002, unmodeled=3), clock.work(0.005)
    # one search = tree + 16 env steps + 16 net calls + 4 ms of Python in between
    total = clock.work(0.010 + 16 * 0.002 + 16 * 0.005 + overhead)
    report = Pipeline(
        {"tree": Stage(tree), "env": Stage(env, calls=16), "net": Stage(net, calls=16)}, total=Stage(total)
    ).run(adapter=StageAdapter(), hardware=SPEC, warmup=1, repeats=3, clock=clock)
    assert report.stages_seconds == pytest.approx(0.010 + 16 * 0.002 + 16 * 0.005)  # 0.122 s
    assert report.unexplained_seconds == pytest.approx(overhead)
    coverages = [s.report.estimate.coverage.fraction for s in report.stages]
    assert coverages == [1.0, 0.25, 1.0]  # env: 1 modeled of 4 ops
    text = report.render()
    assert "unexplained: 4.000 ms" in text and "work between them, and Python dispatch and loop overhead" in text
    assert "env: Low coverage" in text


def test_negative_unexplained_is_labelled_as_overlap():
    clock = Clock()
    a, b = clock.work(0.003), clock.work(0.003)
    total = clock.work(0.004)  # the whole program runs them fused in 4 ms, not 6
    report = Pipeline({"a": Stage(a), "b": Stage(b)}, total=Stage(total)).run(warmup=0, repeats=2, clock=clock)
    assert report.unexplained_seconds == pytest.approx(-0.002)
    assert "negative: the end-to-end run is faster than its stages added up, so they overlap or fuse" in report.render()


def test_a_failing_stage_does_not_stop_the_others():
    clock = Clock()
    report = Pipeline(
        {
            "ok": Stage(clock.work(0.001)),
            "broken": Stage(clock.work(0.001, raises=True)),
            "after": Stage(clock.work(0.002)),
        },
        total=Stage(clock.work(0.010)),
    ).run(adapter=StageAdapter(), hardware=SPEC, warmup=0, repeats=2, clock=clock)
    names = {s.name: s for s in report.stages}
    assert names["broken"].error.endswith("environment step diverged")
    assert names["after"].total_seconds == pytest.approx(0.002)
    assert report.unexplained_seconds is None
    assert "broken: failed — MeasurementError" in report.render()
    assert report.to_dict()["stages"][1]["error"]


def test_bad_stages_are_clear_errors():
    from neural_cost import RecordError

    with pytest.raises(RecordError, match="calls=0"):
        Stage(lambda: None, calls=0)
    with pytest.raises(RecordError, match="not a Stage"):
        Pipeline({"x": lambda: None})


class CompilingAdapter(StageAdapter):
    """Says its benchmark compiles what it times (as JAX's and TensorFlow's do); records each call."""

    compiles_when_timing = True

    def __init__(self):
        self.timed = []

    def benchmark(self, model, *args, warmup=10, repeats=30, kwargs=None, **options):
        self.timed.append((model, args, dict(kwargs or {})))
        return super().benchmark(model, *args, warmup=warmup, repeats=repeats, kwargs=kwargs, **options)


def test_every_stage_and_the_end_to_end_run_are_timed_by_the_adapter():
    # Was (commit b5c081d): the end-to-end run was timed as written, outside the compiling
    # adapter, while each stage was compiled — so a search's op-by-op Python execution read as
    # 99% "unexplained". Right: all timed the same way, through adapter.benchmark.
    seen = []

    def stage(x, *, scale):
        seen.append(("stage", x, scale))

    def whole():
        seen.append(("whole",))

    adapter = CompilingAdapter()
    report = Pipeline({"s": Stage(stage, (3,), kwargs={"scale": 2})}, total=Stage(whole)).run(
        adapter=adapter, hardware=SPEC, warmup=0, repeats=2
    )
    assert report.stages[0].error is None and report.total.error is None
    assert adapter.timed == [(stage, (3,), {"scale": 2}), (whole, (), {})]
    assert seen == [("stage", 3, 2)] * 2 + [("whole",)] * 2  # 0 warmup + 2 repeats each
    assert report.stages[0].report.estimate.flops == 1000  # StageAdapter's one 1,000-element op
    assert report.stages[0].notes == () and report.total.notes == ()


def test_jit_false_times_a_stage_as_written():
    seen = []

    def stage():
        pass

    def whole():
        seen.append("whole")

    adapter = CompilingAdapter()
    report = Pipeline({"s": Stage(stage)}, total=Stage(whole, jit=False)).run(
        adapter=adapter, hardware=SPEC, warmup=1, repeats=2
    )
    assert adapter.timed == [(stage, (), {})]  # only the stage went through the compiling benchmark
    assert seen == ["whole"] * 3  # 1 warmup + 2 repeats, by the plain harness
    assert report.total.error is None and report.total.notes == ()
    with pytest.raises(RecordError, match="jit=1"):
        Stage(whole, jit=1)


class UncompilableAdapter(CompilingAdapter):
    """A compiling benchmark that refuses some functions, as JAX's jit refuses Python branching on values."""

    def benchmark(self, model, *args, **options):
        if getattr(model, "uncompilable", False):
            raise AdapterError("compiling search failed (TracerBoolConversionError): bool() of a traced array\nmore")
        return super().benchmark(model, *args, **options)

    def trace(self, model, inputs, **kwargs):
        if getattr(model, "uncompilable", False):
            raise AdapterError("tracing search failed (TracerBoolConversionError): bool() of a traced array\nmore")
        return super().trace(model, inputs, **kwargs)


def test_a_function_that_cannot_be_compiled_is_timed_as_written_with_a_note():
    clock = Clock()
    stage, total = clock.work(0.002), clock.work(0.003)
    total.uncompilable = True
    report = Pipeline({"s": Stage(stage)}, total=Stage(total)).run(
        adapter=UncompilableAdapter(), hardware=SPEC, warmup=0, repeats=2
    )
    assert report.total.error is None and report.total.report is None
    assert report.total.notes == (
        "not compiled (compiling search failed (TracerBoolConversionError): bool() of a traced array): "
        "timed as written, op by op",
        "not traced: AdapterError: tracing search failed (TracerBoolConversionError): bool() of a traced array",
    )
    assert report.unexplained_seconds is not None  # its time still counts
    text = report.render()
    assert "  end-to-end: not compiled (compiling search failed" in text
    assert report.to_dict()["total"]["notes"] == list(report.total.notes)


def test_a_function_that_fails_as_written_too_is_a_failed_stage():
    clock = Clock()
    broken = clock.work(0.001, raises=True)
    broken.uncompilable = True
    report = Pipeline({"broken": Stage(broken)}).run(adapter=UncompilableAdapter(), hardware=SPEC, warmup=0, repeats=1)
    # the error of the run as written (the user's own), not the compiler's
    assert report.stages[0].error.endswith("environment step diverged")
