"""The roofline plot: a matplotlib Figure drawn from a report's numbers.

matplotlib (the ``plot`` extra) is imported inside the functions, so ``import neural_cost``
never needs it; see ``figure`` for how figures are made and saved, ``plot_labels`` for where
the labels go, and ``plot_pipeline`` for the pipeline's bar.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.errors import NeuralCostError
from ..core.units import format_percent, format_seconds, format_si
from .figure import FORMATS, file_mode, format_of, new_figure, renderer_of, save_figure
from .plot_labels import ABOVE_LEFT, BELOW_RIGHT, Placer, clusters, numbers_text, qualified_name, short_names
from .plot_pipeline import plot_pipeline
from .printable import printable
from .text import coverage_figures

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    from ..analysis.gap import GapReport
    from ..analysis.rows import RowTime

# re-exported: callers import the file helpers and the pipeline plot from here
__all__ = ["FORMATS", "file_mode", "plot_pipeline", "plot_report", "save_figure"]

#: Decades of intensity shown beyond the outermost point or ridge, each side.
_MARGIN = 10.0


def _plottable(row: RowTime) -> bool:
    return row.flops > 0 and row.bytes > 0


def _title(report: GapReport) -> str:
    hardware, measurement = report.hardware, report.measurement
    ran_on = measurement.device_kind
    if measurement.device not in ("", "unknown"):
        ran_on = f"{measurement.device} ({measurement.device_kind})"
    operations, work = coverage_figures(report.estimate)
    return f"{hardware.name} ({hardware.kind}) · ran on {ran_on} · coverage: operations {operations} · work {work}"


#: A dtype gets its own roof when it carries at least this share of the FLOPs: a roof drawn
#: for 128 int64 FLOPs of an ``arange`` beside GFLOPs of float32 says nothing about the program.
ROOF_SHARE = 0.01


def _roofs(report: GapReport) -> tuple[list[tuple[str, float]], list[str]]:
    """The roofs to draw as (name, peak), highest first, and the dtypes left without one.

    A dtype is drawn when it carries >= ROOF_SHARE of the FLOPs; dtypes that share a peak share
    one roof ("float16, bfloat16"). With no FLOPs at all, the spec's default peak is drawn."""
    flops = {dtype: count for dtype, count in report.estimate.flops_by_dtype.items() if count > 0}
    total = sum(flops.values())
    drawn = sorted(d for d, count in flops.items() if count >= ROOF_SHARE * total)
    left_out = sorted(set(flops) - set(drawn))
    if not drawn:
        return [("peak", report.hardware.peak())], left_out
    by_peak: dict[float, list[str]] = {}
    for dtype in drawn:
        by_peak.setdefault(report.hardware.peak(dtype), []).append(dtype)
    return [(", ".join(names), peak) for peak, names in sorted(by_peak.items(), reverse=True)], left_out


def _key(numbered: Sequence[tuple[int, RowTime]], group_by_scope: bool) -> str:
    """The key beside the plot: per plotted row its number (the row's # in the text report's
    table), its scope-qualified name and its intensity, under a header line."""
    full = [row.name if group_by_scope else qualified_name(row.name, row.scope) for _, row in numbered]
    names = [printable(name) for name in short_names(full)]
    noun = "scope" if group_by_scope else "operation"
    width = max(len(noun), *(len(name) for name in names))
    lines = [f" #  {noun:<{width}}  {'FLOP/B':>7}"]
    lines += [
        f"{number:>2}  {name:<{width}}  {row.flops / row.bytes:>7.3g}"
        for (number, row), name in zip(numbered, names, strict=True)
    ]
    return "\n".join(lines)


def plot_report(
    report: GapReport,
    path: str | os.PathLike[str] | None = None,
    top: int = 8,
    group_by_scope: bool = False,
) -> Figure:
    """The roofline of ``report``: memory slope, one compute roof per dtype that carries >= 1%
    of the FLOPs, the program at its observed rate and the top ``top`` operations (or scopes)
    at their bound-implied rate.

    An operation's point sits at flops / max(compute, memory seconds): where the roofline says
    it could run, not a measurement (only the whole program is timed). Points carry the row's
    number in the text report's table; the key beside the plot names them. Rows with zero FLOPs
    or zero bytes have no place on log axes; they are left out and named in a note.
    """
    if path is not None:
        format_of(path)  # fail before drawing
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise NeuralCostError(f"plot top={top!r} must be an integer >= 0")
    hardware, estimate = report.hardware, report.estimate
    unit = "scopes" if group_by_scope else "operations"
    candidates = (report.scope_rows if group_by_scope else report.operation_rows)[:top]
    numbered = [(i, r) for i, r in enumerate(candidates, start=1) if _plottable(r)]
    skipped = [(i, r) for i, r in enumerate(candidates, start=1) if not _plottable(r)]
    roofs, left_out = _roofs(report)
    bandwidth = hardware.memory_bandwidth
    ridges = [peak / bandwidth for _, peak in roofs]

    figure = new_figure(12.0, max(6.5, 1.5 + 0.15 * (len(numbered) + len(roofs) + 4)))
    axes = figure.add_subplot()
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("arithmetic intensity (FLOP/byte)")
    axes.set_ylabel("performance (FLOP/s)")
    axes.set_title(_title(report), fontsize="medium")

    program_point = None
    if estimate.flops > 0 and estimate.bytes > 0 and math.isfinite(report.achieved_flops_per_second):
        program_point = (estimate.arithmetic_intensity, report.achieved_flops_per_second)
    xs = [r.flops / r.bytes for _, r in numbered]
    ys = [r.flops / r.bound_seconds for _, r in numbered]
    intensities = [*ridges, *xs] + ([program_point[0]] if program_point is not None else [])
    low, high = min(intensities) / _MARGIN, max(intensities) * _MARGIN

    (memory,) = axes.plot(
        [low, max(ridges)],
        [bandwidth * low, bandwidth * max(ridges)],
        color="black",
        linewidth=1.5,
        label=f"memory {format_si(bandwidth, 'B/s')}",
    )
    lines = [memory]
    for (name, peak), ridge in zip(roofs, ridges, strict=True):
        (roof,) = axes.plot(
            [ridge, high], [peak, peak], linewidth=1.5, label=f"{name} {format_si(peak, 'FLOP/s')} (ridge {ridge:.3g})"
        )
        axes.plot([ridge], [peak], marker="D", linestyle="none", color=roof.get_color(), gid=f"ridge:{name}")
        lines.append(roof)
    if numbered:
        axes.scatter(
            xs,
            ys,
            s=28,
            color="dimgrey",
            edgecolors="black",
            zorder=3,
            label=f"top {len(numbered)} {unit} (bound-implied rate)",
        )
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
    axes.set_xlim(low, high)
    axes.grid(True, which="major", linewidth=0.4, alpha=0.5)
    legend = axes.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize="x-small")
    if numbered:
        axes.annotate(
            _key(numbered, group_by_scope),
            (0, 0),
            xycoords=legend,
            xytext=(0, -10),
            textcoords="offset points",
            va="top",
            fontsize="x-small",
            family="monospace",
            parse_math=False,
            gid="key",
        )
    axes.annotate(
        _report_note(report, unit, skipped, left_out, program_point is None),
        (0, 0),
        xycoords=("axes fraction", axes.xaxis.label),
        xytext=(0, -6),
        textcoords="offset points",
        va="top",
        fontsize="x-small",
        parse_math=False,
        gid="note",
    )
    # labels are measured against the final layout: settle it, then hold it
    figure.draw_without_rendering()
    axes.set_ylim(axes.get_ylim())
    figure.set_layout_engine("none")
    _place_labels(axes, renderer_of(figure), lines, roofs, ridges, numbered, xs, ys, program_point)
    if path is not None:
        save_figure(figure, path)
    return figure


def _place_labels(
    axes: Axes,
    renderer: RendererBase,
    lines: Sequence[Line2D],
    roofs: Sequence[tuple[str, float]],
    ridges: Sequence[float],
    numbered: Sequence[tuple[int, RowTime]],
    xs: Sequence[float],
    ys: Sequence[float],
    program_point: tuple[float, float] | None,
) -> None:
    placer = Placer(axes, renderer)
    for x, y in zip(xs, ys, strict=True):
        placer.block_point(x, y, 7.0)
    for (_, peak), ridge in zip(roofs, ridges, strict=True):
        placer.block_point(ridge, peak, 7.0)
    if program_point is not None:
        placer.block_point(*program_point, 10.0)
    for line in lines:
        placer.avoid_line(line)
    # ridges first, above the slope where nothing else lies; then the program; then the points
    for (name, peak), ridge, line in zip(roofs, ridges, lines[1:], strict=True):
        placer.place(
            f"{name} ridge {ridge:.3g} FLOP/B",
            (ridge, peak),
            ABOVE_LEFT,
            fontsize="x-small",
            color=line.get_color(),
            gid=f"ridge-label:{name}",
        )
    if program_point is not None:
        placer.place("program (observed)", program_point, BELOW_RIGHT, fontsize="small", gid="program")
    points = [tuple(axes.transData.transform(xy)) for xy in zip(xs, ys, strict=True)]
    for group in clusters(points, radius=4.0):
        number = numbers_text([numbered[i][0] for i in group])
        placer.place(number, (xs[group[0]], ys[group[0]]), BELOW_RIGHT, fontsize="x-small", weight="bold", gid="point")


def _report_note(
    report: GapReport, unit: str, skipped: Sequence[tuple[int, RowTime]], left_out: Sequence[str], no_program: bool
) -> str:
    lines = [
        f"bound {format_seconds(report.bound_seconds)} ({report.bound_side}-bound) · observed "
        f"{format_seconds(report.observed_seconds)} · efficiency {format_percent(report.efficiency)}"
    ]
    if skipped:
        names = ", ".join(f"{i} {printable(r.name)}" for i, r in skipped[:4]) + (", ..." if len(skipped) > 4 else "")
        lines.append(f"{len(skipped)} of the top {unit} not shown: zero FLOPs or zero bytes ({names})")
    if left_out:
        lines.append(f"no roof for {', '.join(left_out)}: under {ROOF_SHARE:.0%} of the FLOPs")
    if no_program:
        lines.append("program not shown: zero FLOPs or zero bytes")
    if report.low_coverage:
        lines.append("WARNING: low coverage; the roofline describes part of the workload")
    if report.device_mismatch:
        lines.append("Device mismatch: scored against peaks of a device the work did not run on")
    return "\n".join(lines)
