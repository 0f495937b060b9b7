"""The slot through which analysis reports are rendered, filled by ``report/``.

Reports hold numbers; text, JSON and plots live in ``report/``, which imports ``analysis``
and never the other way round. ``GapReport.render()`` and friends stay on the objects users
hold, so they reach their presenter through this slot: ``neural_cost.report`` registers one
when it is imported, and the package root imports it, so any ``import neural_cost...``
fills the slot before a report exists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..core.errors import NeuralCostError

if TYPE_CHECKING:
    import os

    from matplotlib.figure import Figure

    from .gap import GapReport
    from .pipeline import PipelineReport


class Presenter(Protocol):
    """What a report's ``render``/``to_dict``/``plot`` methods ask of ``report/``."""

    def render_gap(self, report: GapReport, top: int, group_by_scope: bool, by: str | None) -> str: ...

    def gap_to_dict(self, report: GapReport) -> dict[str, Any]: ...

    def plot_gap(
        self, report: GapReport, path: str | os.PathLike[str] | None, top: int, group_by_scope: bool
    ) -> Figure: ...

    def render_pipeline(self, report: PipelineReport) -> str: ...

    def plot_pipeline(self, report: PipelineReport, path: str | os.PathLike[str] | None) -> Figure: ...


_slot: list[Presenter] = []


def set_presenter(presenter: Presenter) -> None:
    """Make ``presenter`` the one every report renders through (``report/`` calls this)."""
    _slot[:] = [presenter]


def presenter(caller: str) -> Presenter:
    if not _slot:
        raise NeuralCostError(
            f"{caller}: no presenter is registered to render reports; import neural_cost.report "
            f"(``import neural_cost`` does) before rendering"
        )
    return _slot[0]
