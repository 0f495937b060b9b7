"""Rendering of reports: text, plain data and plots.

Importing this package registers its presenter with ``analysis``, so that
``GapReport.render()``/``to_dict()``/``plot()`` and ``PipelineReport``'s reach it while
``analysis`` never imports ``report``. The package root imports it.
"""

from ..analysis.presenter import set_presenter
from .pipeline_text import render_pipeline
from .presenter import ReportPresenter
from .serialize import report_to_dict
from .text import render_report

set_presenter(ReportPresenter())

__all__ = ["ReportPresenter", "render_pipeline", "render_report", "report_to_dict"]
