"""Roofline and pipeline plots: matplotlib Figures drawn from a report's numbers.

matplotlib (the ``plot`` extra) is imported inside the functions, so ``import neural_cost``
never needs it. Figures are built with ``matplotlib.figure.Figure`` directly, never
through pyplot, so plotting touches no global state and needs no display.
"""

from __future__ import annotations

import math
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import FrameworkNotInstalledError, NeuralCostError
from ..core.units import format_percent, format_percent_down, format_seconds, format_si

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..analysis.gap import GapReport
    from ..analysis.pipeline import PipelineReport
    from ..analysis.rows import RowTime

#: File formats a plot is saved in, by the path's extension.
FORMATS = {".png": "png", ".svg": "svg"}
#: Decades of intensity shown beyond the outermost point or ridge, each side.
_MARGIN = 10.0


def _new_figure(width: float, height: float) -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise FrameworkNotInstalledError(
            "plotting needs matplotlib, which is not installed; install it with: pip install 'neural-cost[plot]'"
        ) from error
    return Figure(figsize=(width, height), layout="constrained")


def _format_of(path: str | os.PathLike[str]) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise NeuralCostError(
            f"plot path {os.fspath(path)!r} ends in {suffix or 'no extension'!r}; "
            f"name a {' or '.join(FORMATS)} file (the extension picks the format)"
        )
    return FORMATS[suffix]


def file_mode(target: Path) -> int:
    """The permission bits ``open(target, "w")`` would leave: the existing file's, else 0o666
    less the umask. An atomic write goes through a ``mkstemp`` file, which is always 0600."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:  # no such file yet
        pass
    umask = os.umask(0o022)  # the only way to read it is to set it; put it straight back
    os.umask(umask)
    return 0o666 & ~umask


def save_figure(figure: Figure, path: str | os.PathLike[str]) -> Path:
    """Write ``figure`` to ``path`` (PNG or SVG by extension): complete or absent, never half-written."""
    file_format = _format_of(path)
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as error:
        raise NeuralCostError(
            f"plot path {os.fspath(path)!r}: cannot write ({error.strerror or error}); "
            f"pass a path to a file in a writable directory"
        ) from error
    try:
        with os.fdopen(fd, "wb") as handle:
            figure.savefig(handle, format=file_format)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, file_mode(target))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _plottable(row: RowTime) -> bool:
    return row.flops > 0 and row.bytes > 0


def _title(report: GapReport) -> str:
    hardware, measurement = report.hardware, report.measurement
    coverage = report.estimate.coverage
    ran_on = measurement.device_kind
    if measurement.device not in ("", "unknown"):
        ran_on = f"{measurement.device} ({measurement.device_kind})"
    covered = format_percent_down(coverage.modeled + coverage.free, coverage.total)
    return f"{hardware.name} ({hardware.kind}) · ran on {ran_on} · coverage {covered}"


def _roof_dtypes(report: GapReport) -> list[str | None]:
    """Dtypes with FLOPs in the estimate, each drawn with its own roof; None: the spec's fallback peak."""
    present = [dtype for dtype, flops in report.estimate.flops_by_dtype.items() if flops > 0]
    return sorted(present, key=lambda d: -report.hardware.peak(d)) if present else [None]


def plot_report(
    report: GapReport,
    path: str | os.PathLike[str] | None = None,
    top: int = 8,
    group_by_scope: bool = False,
) -> Figure:
    """The roofline of ``report``: memory slope, one compute roof per dtype present, the program
    at its observed rate and the top ``top`` operations (or scopes) at their bound-implied rate.

    An operation's point sits at flops / max(compute, memory seconds): where the roofline says
    it could run, not a measurement (only the whole program is timed). Rows with zero FLOPs or
    zero bytes have no place on log axes; they are left out and counted in a note.
    """
    if path is not None:
        _format_of(path)  # fail before drawing
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise NeuralCostError(f"plot top={top!r} must be an integer >= 0")
    figure = _new_figure(9.0, 6.0)
    axes = figure.add_subplot()
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("arithmetic intensity (FLOP/byte)")
    axes.set_ylabel("performance (FLOP/s)")
    axes.set_title(_title(report), fontsize="medium")

    hardware, estimate = report.hardware, report.estimate
    unit = "scopes" if group_by_scope else "operations"
    candidates = (report.scope_rows if group_by_scope else report.operation_rows)[:top]
    rows = [r for r in candidates if _plottable(r)]
    skipped = [r for r in candidates if not _plottable(r)]
    dtypes = _roof_dtypes(report)
    ridges = [hardware.ridge_point(d) for d in dtypes]

    program_point = None
    if estimate.flops > 0 and estimate.bytes > 0 and math.isfinite(report.achieved_flops_per_second):
        program_point = (estimate.arithmetic_intensity, report.achieved_flops_per_second)
    intensities = [*ridges, *(r.flops / r.bytes for r in rows)]
    if program_point is not None:
        intensities.append(program_point[0])
    low, high = min(intensities) / _MARGIN, max(intensities) * _MARGIN

    bandwidth = hardware.memory_bandwidth
    axes.plot(
        [low, max(ridges)],
        [bandwidth * low, bandwidth * max(ridges)],
        color="black",
        linewidth=1.5,
        label=f"memory {format_si(bandwidth, 'B/s')}",
    )
    for dtype, ridge in zip(dtypes, ridges, strict=True):
        peak = hardware.peak(dtype)
        name = dtype or "peak"
        (roof,) = axes.plot(
            [ridge, high], [peak, peak], linewidth=1.5, label=f"{name} {format_si(peak, 'FLOP/s')} (ridge {ridge:.3g})"
        )
        axes.plot([ridge], [peak], marker="D", linestyle="none", color=roof.get_color(), gid=f"ridge:{name}")
        axes.annotate(
            f"{name} ridge {ridge:.3g} FLOP/B",
            (ridge, peak),
            xytext=(4, 6),
            textcoords="offset points",
            fontsize="x-small",
            color=roof.get_color(),
        )

    if rows:
        xs = [r.flops / r.bytes for r in rows]
        ys = [r.flops / r.bound_seconds for r in rows]
        axes.scatter(
            xs,
            ys,
            s=28,
            color="dimgrey",
            edgecolors="black",
            zorder=3,
            label=f"top {len(rows)} {unit} (bound-implied rate)",
        )
        for row, x, y in zip(rows, xs, ys, strict=True):
            axes.annotate(row.name, (x, y), xytext=(4, -10), textcoords="offset points", fontsize="x-small")
    if program_point is not None:
        axes.scatter(
            [program_point[0]],
            [program_point[1]],
            s=70,
            marker="*",
            color="tab:red",
            zorder=4,
            label="program (observed)",
        )
        axes.annotate("program (observed)", program_point, xytext=(6, 6), textcoords="offset points", fontsize="small")

    axes.set_xlim(low, high)
    axes.grid(True, which="major", linewidth=0.4, alpha=0.5)
    axes.legend(loc="lower right", fontsize="x-small")
    # upper left lies above the memory slope, where no point can fall
    axes.text(
        0.01,
        0.99,
        _report_note(report, unit, skipped, program_point is None),
        transform=axes.transAxes,
        va="top",
        fontsize="x-small",
        gid="note",
        bbox={"facecolor": "white", "edgecolor": "lightgrey", "alpha": 0.9},
    )
    if path is not None:
        save_figure(figure, path)
    return figure


def _report_note(report: GapReport, unit: str, skipped: Sequence[RowTime], no_program: bool) -> str:
    lines = [
        f"bound {format_seconds(report.bound_seconds)} ({report.bound_side}-bound) · observed "
        f"{format_seconds(report.observed_seconds)} · efficiency {format_percent(report.efficiency)}"
    ]
    if skipped:
        names = ", ".join(r.name for r in skipped[:4]) + (", ..." if len(skipped) > 4 else "")
        lines.append(f"{len(skipped)} of the top {unit} not shown: zero FLOPs or zero bytes ({names})")
    if no_program:
        lines.append("program not shown: zero FLOPs or zero bytes")
    if report.low_coverage:
        lines.append("WARNING: low coverage; the roofline describes part of the workload")
    if report.device_mismatch:
        lines.append("Device mismatch: scored against peaks of a device the work did not run on")
    return "\n".join(lines)


def _time_scale(seconds: float) -> tuple[float, str]:
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= scale:
            return scale, unit
    return 1e-9, "ns"


def plot_pipeline(report: PipelineReport, path: str | os.PathLike[str] | None = None) -> Figure:
    """A stacked bar of each stage's time × calls per pipeline run, plus the unexplained rest
    (hatched), against the end-to-end time. A negative rest (stages overlap or fuse inside the
    whole program) is a separate bar below zero labelled "overlap"."""
    if path is not None:
        _format_of(path)
    figure = _new_figure(7.0, 5.5)
    axes = figure.add_subplot()
    ran = [s for s in report.stages if s.total_seconds is not None]
    failed = [s for s in report.stages if s.total_seconds is None]
    end_to_end = report.total.total_seconds if report.total is not None else None
    gap = report.unexplained_seconds
    largest = max([report.stages_seconds, end_to_end or 0.0, abs(gap or 0.0)])
    scale, unit = _time_scale(largest) if largest > 0 else (1.0, "s")

    bottom = 0.0
    for stage in ran:
        seconds = stage.total_seconds or 0.0
        axes.bar(
            ["pipeline"],
            [seconds / scale],
            bottom=[bottom / scale],
            label=f"{stage.name} × {stage.calls}: {format_seconds(seconds)}",
            edgecolor="white",
        )
        bottom += seconds
    if gap is not None and gap >= 0:
        axes.bar(
            ["pipeline"],
            [gap / scale],
            bottom=[bottom / scale],
            color="lightgrey",
            hatch="//",
            edgecolor="grey",
            label=f"unexplained: {format_seconds(gap)}",
        )
    elif gap is not None:
        axes.bar(
            ["overlap"],
            [gap / scale],
            color="lightgrey",
            hatch="\\\\",
            edgecolor="grey",
            label=f"overlap: {format_seconds(gap)}",
        )
        axes.axhline(0.0, color="black", linewidth=0.8)
    if end_to_end is not None:
        axes.axhline(
            end_to_end / scale, color="tab:red", linestyle="--", label=f"end-to-end: {format_seconds(end_to_end)}"
        )

    axes.set_xlabel("stages × calls, stacked")
    axes.set_ylabel(f"time per pipeline run ({unit})")
    title = "Pipeline: stage times vs end-to-end"
    if report.hardware is not None:
        title += f" · peaks for {report.hardware.name}"
    axes.set_title(title, fontsize="medium")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="x-small")
    notes = [f"failed: {s.name} ({s.error})"[:120] for s in failed]
    if report.total is None:
        notes.append("no end-to-end run to compare with")
    elif gap is None:
        notes.append("unexplained: unknown (a stage or the end-to-end run failed)")
    if notes:
        axes.text(0.01, -0.12, "\n".join(notes), transform=axes.transAxes, va="top", fontsize="x-small", gid="note")
    if path is not None:
        save_figure(figure, path)
    return figure
