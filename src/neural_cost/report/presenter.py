"""The presenter ``analysis`` reports render through: text, JSON and plots from ``report/``.

``neural_cost.report`` registers it on import (see ``analysis/presenter.py`` for why the
slot exists). matplotlib is still imported only when a plot is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .pipeline_text import render_pipeline
from .plot import plot_pipeline, plot_report
from .serialize import report_to_dict
from .text import render_report

if TYPE_CHECKING:
    import os

    from matplotlib.figure import Figure

    from ..analysis.gap import GapReport
    from ..analysis.pipeline import PipelineReport


class ReportPresenter:
    """Implements ``analysis.presenter.Presenter`` with this package's functions."""

    def render_gap(self, report: GapReport, top: int, group_by_scope: bool, by: str | None) -> str:
        return render_report(report, top=top, group_by_scope=group_by_scope, by=by)

    def gap_to_dict(self, report: GapReport) -> dict[str, Any]:
        return report_to_dict(report)

    def plot_gap(
        self, report: GapReport, path: str | os.PathLike[str] | None, top: int, group_by_scope: bool
    ) -> Figure:
        return plot_report(report, path=path, top=top, group_by_scope=group_by_scope)

    def render_pipeline(self, report: PipelineReport) -> str:
        return render_pipeline(report)

    def plot_pipeline(self, report: PipelineReport, path: str | os.PathLike[str] | None) -> Figure:
        return plot_pipeline(report, path=path)
