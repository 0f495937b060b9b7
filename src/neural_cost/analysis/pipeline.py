"""Pipelines: a workload made of stages, each traced, costed and timed, against the whole.

``Pipeline({"tree": Stage(...), "env": Stage(..., calls=16), ...}, total=Stage(search, ...))``
measures every stage (its own coverage and roofline), multiplies by its call count, and
compares the sum with the end-to-end run. Every stage and the end-to-end run are timed the
same way: compiled when the adapter compiles what it times (JAX's jit, tf.function) unless the
stage says ``jit=False``; a function that cannot be compiled (Python branching on array values)
is timed as written, with a note on its row. The difference is *unexplained*: what the whole
program does outside its stages (glue between them, work it fuses or drops), less the
per-call dispatch and sync each stage pays when timed alone; negative when the stages overlap
or fuse inside the whole program.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.errors import NeuralCostError, RecordError
from ..hardware.spec import HardwareSpec
from ..measure.timing import Measurement
from .gap import GapReport
from .presenter import presenter
from .workload import analyze_workload, time_compiled_or_as_written

if TYPE_CHECKING:
    import os

    from matplotlib.figure import Figure

    from ..adapters.base import FrameworkAdapter


@dataclass(frozen=True)
class Stage:
    """One stage of a pipeline: ``fn(*args, **kwargs)`` run ``calls`` times per pipeline run.

    ``jit=False`` times it as written, op by op, where the adapter would compile it (JAX, TensorFlow);
    an already-compiled function (``jax.jit``, ``tf.function``) runs compiled either way."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    calls: int = 1
    kwargs: Mapping[str, Any] | None = field(default_factory=dict)
    jit: bool = True

    def __post_init__(self) -> None:
        if self.kwargs is None:
            object.__setattr__(self, "kwargs", {})
        elif not isinstance(self.kwargs, Mapping):
            raise RecordError(f"Stage kwargs={self.kwargs!r} must be a mapping of keyword arguments, or None")
        if not callable(self.fn):
            raise RecordError(f"Stage fn={self.fn!r} is not callable")
        if isinstance(self.calls, bool) or not isinstance(self.calls, int) or self.calls < 1:
            raise RecordError(f"Stage calls={self.calls!r} must be an integer >= 1")
        if not isinstance(self.jit, bool):
            raise RecordError(f"Stage jit={self.jit!r} must be True (compile where the adapter does) or False")
        object.__setattr__(self, "args", tuple(self.args) if isinstance(self.args, (tuple, list)) else (self.args,))


@dataclass(frozen=True)
class StageResult:
    """A stage's measurement and roofline, or the error that stopped it; ``notes`` say how it
    was timed when that differs from the other stages (not compiled), or why it has no roofline."""

    name: str
    calls: int
    measurement: Measurement | None = None
    report: GapReport | None = None
    error: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def seconds_per_call(self) -> float | None:
        return self.measurement.median_seconds if self.measurement is not None else None

    @property
    def total_seconds(self) -> float | None:
        per_call = self.seconds_per_call
        return per_call * self.calls if per_call is not None else None

    @property
    def bound_seconds(self) -> float | None:
        return self.report.bound_seconds * self.calls if self.report is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "calls": self.calls,
            "error": self.error,
            "notes": list(self.notes),
            "seconds_per_call": self.seconds_per_call,
            "total_seconds": self.total_seconds,
            "bound_seconds": self.bound_seconds,
            "measurement": self.measurement.to_dict() if self.measurement is not None else None,
            "report": self.report.to_dict() if self.report is not None else None,
        }


@dataclass(frozen=True)
class PipelineReport:
    stages: tuple[StageResult, ...]
    total: StageResult | None
    hardware: HardwareSpec | None

    @property
    def stages_seconds(self) -> float:
        """Σ time per call × calls over the stages that ran."""
        return sum(s.total_seconds for s in self.stages if s.total_seconds is not None)

    @property
    def unexplained_seconds(self) -> float | None:
        """End-to-end time minus the sum of the stages (negative: they overlap or fuse)."""
        if self.total is None or self.total.total_seconds is None or any(s.error for s in self.stages):
            return None
        return self.total.total_seconds - self.stages_seconds

    # The table and the plot are drawn by report/ through the presenter slot: analysis never imports it.
    def render(self) -> str:
        return presenter("PipelineReport.render").render_pipeline(self)

    def plot(self, path: str | os.PathLike[str] | None = None) -> Figure:
        """Stacked bar of stage times × calls with the unexplained part (matplotlib, the ``plot`` extra)."""
        return presenter("PipelineReport.plot").plot_pipeline(self, path)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "neural-cost/pipeline",
            "schema_version": 1,
            "hardware": self.hardware.to_dict() if self.hardware is not None else None,
            "stages": [s.to_dict() for s in self.stages],
            "total": self.total.to_dict() if self.total is not None else None,
            "stages_seconds": self.stages_seconds,
            "unexplained_seconds": self.unexplained_seconds,
        }


class Pipeline:
    """Stages by name, and optionally the end-to-end ``total`` they are compared with."""

    def __init__(self, stages: Mapping[str, Stage], total: Stage | None = None) -> None:
        if not stages:
            raise RecordError("Pipeline needs at least one stage")
        for name, stage in stages.items():
            if not isinstance(stage, Stage):
                raise RecordError(f"Pipeline stage {name!r} is a {type(stage).__name__}, not a Stage")
        self.stages = dict(stages)
        self.total = total

    def run(
        self,
        adapter: FrameworkAdapter | None = None,
        hardware: HardwareSpec | None = None,
        *,
        warmup: int = 3,
        repeats: int = 10,
        clock: Callable[[], float] | None = None,
        profile: bool = False,
    ) -> PipelineReport:
        """Trace, estimate and time each stage (and the total); a failing stage is reported, the
        others still run. Without ``hardware`` the adapter's device spec is used. ``profile``:
        also measure each stage's time per kernel (3 more runs per stage under the framework's
        profiler; off by default, as a whole program's report profiled once says the same)."""
        if hardware is None and adapter is not None:
            try:
                hardware = adapter.hardware()
            except NeuralCostError:
                hardware = None
        results = tuple(
            self._run(name, stage, adapter, hardware, warmup, repeats, clock, profile)
            for name, stage in self.stages.items()
        )
        total = (
            self._run("end-to-end", self.total, adapter, hardware, warmup, repeats, clock, profile)
            if self.total
            else None
        )
        return PipelineReport(results, total, hardware)

    @staticmethod
    def _run(
        name: str,
        stage: Stage,
        adapter: FrameworkAdapter | None,
        hardware: HardwareSpec | None,
        warmup: int,
        repeats: int,
        clock: Callable[[], float] | None,
        profile: bool = False,
    ) -> StageResult:
        kwargs = dict(stage.kwargs or {})
        try:
            # every stage and the end-to-end run alike (see the module docstring), so that the
            # remainder compares like with like
            measurement, note = time_compiled_or_as_written(
                adapter, stage.fn, stage.args, kwargs, warmup=warmup, repeats=repeats, jit=stage.jit, clock=clock
            )
        except Exception as error:  # a failing stage is a row, never the end of the pipeline
            return StageResult(name, stage.calls, error=_describe(error))
        notes = (note,) if note else ()
        if adapter is None or hardware is None:
            return StageResult(name, stage.calls, measurement, notes=notes)
        try:
            report = analyze_workload(
                adapter, stage.fn, stage.args, kwargs, hardware, measurement=measurement, profile=profile
            )
        except Exception as error:
            if note is None:
                return StageResult(name, stage.calls, error=_describe(error))
            # what could not be compiled cannot be traced either (the same tracer meets the same
            # Python branch): its time still counts, as timed
            untraced = f"not traced: {_describe(error, first_line=True)}"
            return StageResult(name, stage.calls, measurement, notes=(*notes, untraced))
        return StageResult(name, stage.calls, measurement, report, notes=notes)


def _describe(error: Exception, first_line: bool = False) -> str:
    text = f"{type(error).__name__}: {error}"
    return (text.splitlines()[0] if first_line else text)[:300]
