"""Pipelines: a workload made of stages, each traced, costed and timed, against the whole.

``Pipeline({"tree": Stage(...), "env": Stage(..., calls=16), ...}, total=Stage(search, ...))``
measures every stage (its own coverage and roofline), multiplies by its call count, and
compares the sum with the end-to-end run. The difference is *unexplained*: usually Python
dispatch and loop overhead; negative when stages overlap or fuse inside the whole program.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.errors import NeuralCostError, RecordError
from ..core.units import format_percent, format_percent_down, format_seconds
from ..costs.estimate import estimate_trace
from ..hardware.spec import HardwareSpec
from ..measure.timing import Measurement, benchmark
from .gap import GapReport, analyze_gap

if TYPE_CHECKING:
    import os

    from matplotlib.figure import Figure


def _takes_kwargs_keyword(method: Callable[..., Any]) -> bool:
    """Whether ``method`` takes the model's keywords as one ``kwargs=`` mapping (not ``**kwargs``)."""
    parameter = inspect.signature(method).parameters.get("kwargs")
    return parameter is not None and parameter.kind is not inspect.Parameter.VAR_KEYWORD


@dataclass(frozen=True)
class Stage:
    """One stage of a pipeline: ``fn(*args, **kwargs)`` run ``calls`` times per pipeline run."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    calls: int = 1
    kwargs: Mapping[str, Any] | None = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kwargs is None:
            object.__setattr__(self, "kwargs", {})
        elif not isinstance(self.kwargs, Mapping):
            raise RecordError(f"Stage kwargs={self.kwargs!r} must be a mapping of keyword arguments, or None")
        if not callable(self.fn):
            raise RecordError(f"Stage fn={self.fn!r} is not callable")
        if isinstance(self.calls, bool) or not isinstance(self.calls, int) or self.calls < 1:
            raise RecordError(f"Stage calls={self.calls!r} must be an integer >= 1")
        object.__setattr__(self, "args", tuple(self.args) if isinstance(self.args, (tuple, list)) else (self.args,))


@dataclass(frozen=True)
class StageResult:
    """A stage's measurement and roofline, or the error that stopped it."""

    name: str
    calls: int
    measurement: Measurement | None = None
    report: GapReport | None = None
    error: str | None = None

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

    def render(self) -> str:
        end_to_end = self.total.total_seconds if self.total is not None else None
        header = (
            "stage",
            "calls",
            "per call",
            "± stdev",
            "× calls",
            "share",
            "bound × calls",
            "efficiency",
            "coverage",
        )
        rows = []
        for stage in self.stages:
            if stage.error is not None or stage.measurement is None:
                rows.append([stage.name, str(stage.calls), "failed", "", "", "", "", "", ""])
                continue
            total = stage.total_seconds or 0.0
            report = stage.report
            rows.append(
                [
                    stage.name,
                    str(stage.calls),
                    format_seconds(stage.measurement.median_seconds),
                    format_seconds(stage.measurement.stdev_seconds),
                    format_seconds(total),
                    format_percent(total / end_to_end) if end_to_end else "-",
                    format_seconds(stage.bound_seconds) if stage.bound_seconds is not None else "-",
                    format_percent(report.efficiency) if report is not None else "-",
                    format_percent_down(
                        report.estimate.coverage.modeled + report.estimate.coverage.free,
                        report.estimate.coverage.total,
                    )
                    if report is not None
                    else "-",
                ]
            )
        widths = [max(len(r[i]) for r in [list(header), *rows]) for i in range(len(header))]

        def line(cells: list[str]) -> str:
            return "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            ).rstrip()

        out = ["Neural cost pipeline analysis"]
        if self.hardware is not None:
            out.append(f"  peaks for {self.hardware.name} ({self.hardware.kind}; {self.hardware.source})")
        out += ["  " + line(list(header))] + ["  " + line(r) for r in rows]
        failed = sum(1 for s in self.stages if s.total_seconds is None)
        missing = f" ({failed} failed stage{'s' if failed > 1 else ''} not included)" if failed else ""
        out.append(f"  stages: {format_seconds(self.stages_seconds)} per pipeline run{missing}")
        if self.total is not None and self.total.error is not None:
            out.append(f"  end-to-end: failed ({self.total.error})")
        elif end_to_end is not None:
            out.append(f"  end-to-end: {format_seconds(end_to_end)} ({self.total.name if self.total else ''})")
            gap = self.unexplained_seconds
            if gap is None:
                out.append("  unexplained: unknown (a stage failed)")
            elif gap >= 0:
                out.append(
                    f"  unexplained: {format_seconds(gap)} ({format_percent(gap / end_to_end)} of end-to-end) — time "
                    f"outside the stages, usually Python dispatch and loop overhead"
                )
            else:
                out.append(
                    f"  unexplained: {format_seconds(gap)} — negative: the end-to-end run is faster than its stages "
                    f"added up, so they overlap or fuse inside the whole program"
                )
        for stage in self.stages:
            if stage.error is not None:
                out.append(f"  {stage.name}: failed — {stage.error}")
            elif stage.report is not None:
                for finding in stage.report.findings:
                    if finding.severity == "warning" or finding.header:
                        out.append(f"  {stage.name}: {finding.message}")
        return "\n".join(out) + "\n"

    def plot(self, path: str | os.PathLike[str] | None = None) -> Figure:
        """Stacked bar of stage times × calls with the unexplained part (matplotlib, the ``plot`` extra)."""
        from ..report.plot import plot_pipeline

        return plot_pipeline(self, path=path)

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
        adapter: Any = None,
        hardware: HardwareSpec | None = None,
        *,
        warmup: int = 3,
        repeats: int = 10,
        clock: Callable[[], float] | None = None,
    ) -> PipelineReport:
        """Trace, estimate and time each stage (and the total); a failing stage is reported, the
        others still run. Without ``hardware`` the adapter's device spec is used."""
        if hardware is None and adapter is not None:
            try:
                hardware = adapter.hardware()
            except NeuralCostError:
                hardware = None
        results = tuple(
            self._run(name, stage, adapter, hardware, warmup, repeats, clock) for name, stage in self.stages.items()
        )
        total = (
            self._run("end-to-end", self.total, adapter, hardware, warmup, repeats, clock, end_to_end=True)
            if self.total
            else None
        )
        return PipelineReport(results, total, hardware)

    @staticmethod
    def _run(
        name: str,
        stage: Stage,
        adapter: Any,
        hardware: HardwareSpec | None,
        warmup: int,
        repeats: int,
        clock: Callable[[], float] | None,
        end_to_end: bool = False,
    ) -> StageResult:
        kwargs = dict(stage.kwargs or {})
        try:
            if clock is not None:
                measurement = benchmark(stage.fn, *stage.args, warmup=warmup, repeats=repeats, clock=clock, **kwargs)
            elif adapter is None or (end_to_end and getattr(adapter, "framework", None) == "jax"):
                # JaxAdapter.benchmark jit-compiles what it times: the end-to-end Python function
                # would become one XLA program, and the Python dispatch and loop overhead that
                # "unexplained" stands for would never be timed. Time it as the user runs it.
                measurement = benchmark(stage.fn, *stage.args, warmup=warmup, repeats=repeats, **kwargs)
            elif _takes_kwargs_keyword(adapter.benchmark):  # PyTorch, TensorFlow: kwargs=, not **kwargs
                measurement = adapter.benchmark(stage.fn, *stage.args, warmup=warmup, repeats=repeats, kwargs=kwargs)
            else:
                measurement = adapter.benchmark(stage.fn, *stage.args, warmup=warmup, repeats=repeats, **kwargs)
            report = None
            if adapter is not None and hardware is not None:
                trace = adapter.trace(stage.fn, stage.args, **({"kwargs": kwargs} if kwargs else {}))
                report = analyze_gap(estimate_trace(trace), measurement, hardware)
            return StageResult(name, stage.calls, measurement, report)
        except Exception as error:  # a failing stage is a row, never the end of the pipeline
            return StageResult(name, stage.calls, error=f"{type(error).__name__}: {error}"[:300])
