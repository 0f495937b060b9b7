"""The pipeline table: a pure function of a PipelineReport's numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.units import format_percent, format_seconds
from .printable import printable
from .text import coverage_figures, peaks_text

if TYPE_CHECKING:
    from ..analysis.pipeline import PipelineReport, StageResult

TITLE = "Neural cost pipeline analysis"
HEADER = (
    "stage",
    "calls",
    "per call",
    "± stdev",
    "× calls",
    "share",
    "bound × calls",
    "efficiency",
    "coverage (ops · work)",
)


def _row(stage: StageResult, end_to_end: float | None) -> list[str]:
    if stage.error is not None or stage.measurement is None:
        return [stage.name, str(stage.calls), "failed", "", "", "", "", "", ""]
    total = stage.total_seconds or 0.0
    report = stage.report
    return [
        stage.name,
        str(stage.calls),
        format_seconds(stage.measurement.median_seconds),
        format_seconds(stage.measurement.stdev_seconds),
        format_seconds(total),
        format_percent(total / end_to_end) if end_to_end else "-",
        format_seconds(stage.bound_seconds) if stage.bound_seconds is not None else "-",
        format_percent(report.efficiency) if report is not None else "-",
        # operations · work, as the single report's coverage line prints them (rounded down; work a ceiling)
        " · ".join(coverage_figures(report.estimate)) if report is not None else "-",
    ]


def _peaks_line(report: PipelineReport) -> str:
    """The numbers the stages were scored with, as a report's device line prints them: the peak
    of every dtype the stages compute in, and the bandwidth, each beside its source."""
    assert report.hardware is not None
    dtypes = dict.fromkeys(
        dtype for stage in report.stages if stage.report is not None for dtype in stage.report.estimate.flops_by_dtype
    )
    return peaks_text(report.hardware, dtypes)


def render_pipeline(report: PipelineReport) -> str:
    end_to_end = report.total.total_seconds if report.total is not None else None
    # names and messages come from the user's code or a saved file: escaped before widths are measured
    rows = [[printable(cell) for cell in _row(stage, end_to_end)] for stage in report.stages]
    widths = [max(len(r[i]) for r in [list(HEADER), *rows]) for i in range(len(HEADER))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    out = [TITLE]
    if report.hardware is not None:
        out.append("  " + _peaks_line(report))
    out += ["  " + line(list(HEADER))] + ["  " + line(r) for r in rows]
    failed = sum(1 for s in report.stages if s.total_seconds is None)
    missing = f" ({failed} failed stage{'s' if failed > 1 else ''} not included)" if failed else ""
    out.append(f"  stages: {format_seconds(report.stages_seconds)} per pipeline run{missing}")
    if report.total is not None and report.total.error is not None:
        out.append(f"  end-to-end: failed ({report.total.error})")
    elif end_to_end is not None:
        out.append(f"  end-to-end: {format_seconds(end_to_end)} ({report.total.name if report.total else ''})")
        gap = report.unexplained_seconds
        if gap is None:
            out.append("  unexplained: unknown (a stage failed)")
        elif gap >= 0:
            out.append(
                f"  unexplained: {format_seconds(gap)} ({format_percent(gap / end_to_end)} of end-to-end) — time "
                f"outside the stages: work between them, and Python dispatch and loop overhead where a run is not "
                f"compiled"
            )
        else:
            out.append(
                f"  unexplained: {format_seconds(gap)} — negative: the end-to-end run is faster than its stages "
                f"added up, so they overlap or fuse inside the whole program (and each stage timed alone pays its own "
                f"dispatch and sync)"
            )
    for stage in (*report.stages, *([report.total] if report.total is not None else [])):
        out.extend(f"  {stage.name}: {note}" for note in stage.notes)  # how it was timed, when not as the others
    for stage in report.stages:
        if stage.error is not None:
            out.append(f"  {stage.name}: failed — {stage.error}")
        elif stage.report is not None:
            for finding in stage.report.findings:
                if finding.severity == "warning" or finding.header:
                    out.append(f"  {stage.name}: {finding.message}")
    return "\n".join(printable(text) for text in out) + "\n"
