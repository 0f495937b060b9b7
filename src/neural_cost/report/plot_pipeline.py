"""The pipeline plot: each stage's time per pipeline run, stacked, against the end-to-end run."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.units import format_seconds
from .figure import format_of, new_figure, renderer_of, save_figure
from .printable import printable

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    from ..analysis.pipeline import PipelineReport


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
        format_of(path)
    figure = new_figure(7.0, 5.5)
    axes = figure.add_subplot()
    ran = [s for s in report.stages if s.total_seconds is not None]
    failed = [s for s in report.stages if s.total_seconds is None]
    end_to_end = report.total.total_seconds if report.total is not None else None
    gap = report.unexplained_seconds
    largest = max([report.stages_seconds, end_to_end or 0.0, abs(gap or 0.0)])
    scale, unit = _time_scale(largest) if largest > 0 else (1.0, "s")

    segments: list[tuple[Rectangle, str]] = []  # each bar part, with the words written inside it if they fit
    bottom = 0.0
    for stage in ran:
        seconds = stage.total_seconds or 0.0
        name = f"{_clip(printable(stage.name))} × {stage.calls}"
        (part,) = axes.bar(
            ["pipeline"],
            [seconds / scale],
            bottom=[bottom / scale],
            label=f"{name}: {format_seconds(seconds)}",
            edgecolor="white",
        )
        segments.append((part, f"{name}\n{format_seconds(seconds)}"))
        bottom += seconds
    if gap is not None and gap >= 0:
        (part,) = axes.bar(
            ["pipeline"],
            [gap / scale],
            bottom=[bottom / scale],
            color="lightgrey",
            hatch="//",
            edgecolor="grey",
            label=f"unexplained: {format_seconds(gap)}",
        )
        segments.append((part, f"unexplained\n{format_seconds(gap)}"))
    elif gap is not None:
        (part,) = axes.bar(
            ["overlap"],
            [gap / scale],
            color="lightgrey",
            hatch="\\\\",
            edgecolor="grey",
            label=f"overlap: {format_seconds(gap)}",
        )
        segments.append((part, f"overlap\n{format_seconds(gap)}"))
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
    # the end-to-end line, then the parts top down as the bar stacks them bottom up
    entries = list(zip(*axes.get_legend_handles_labels(), strict=True))
    lines = [entry for entry in entries if entry[1].startswith("end-to-end")]
    entries = lines + [entry for entry in entries if entry not in lines][::-1]
    axes.legend(*zip(*entries, strict=True), loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="x-small")
    notes = [_clip(printable(f"failed: {s.name} ({s.error})"), 120) for s in failed]
    if report.total is None:
        notes.append("no end-to-end run to compare with")
    elif gap is None:
        notes.append("unexplained: unknown (a stage or the end-to-end run failed)")
    if notes:
        axes.annotate(
            "\n".join(notes),
            (0, 0),
            xycoords=("axes fraction", axes.xaxis.label),
            xytext=(0, -6),
            textcoords="offset points",
            va="top",
            fontsize="x-small",
            parse_math=False,
            gid="note",
        )
    figure.draw_without_rendering()
    figure.set_layout_engine("none")
    _label_segments(axes, renderer_of(figure), segments)
    if path is not None:
        save_figure(figure, path)
    return figure


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _label_segments(axes: Axes, renderer: RendererBase, segments: Sequence[tuple[Rectangle, str]]) -> None:
    """Write each part's name and time inside it where they fit; a part too thin keeps only its
    legend entry, so no label ever spills over a neighbour."""
    for part, words in segments:
        x, y = part.get_x() + part.get_width() / 2, part.get_y() + part.get_height() / 2
        label = axes.text(
            x,
            y,
            words,
            ha="center",
            va="center",
            fontsize="x-small",
            parse_math=False,
            gid="segment",
            bbox={"facecolor": "white", "alpha": 0.7, "edgecolor": "none", "pad": 1.0},
        )
        room, box = part.get_window_extent(renderer).padded(-4.0), label.get_window_extent(renderer)
        if not (room.x0 <= box.x0 and box.x1 <= room.x1 and room.y0 <= box.y0 and box.y1 <= room.y1):
            label.remove()
