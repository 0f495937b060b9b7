"""Plot figures and files: a Figure that needs no display, and a save that is atomic.

matplotlib (the ``plot`` extra) is imported inside the functions, so ``import neural_cost``
never needs it. Figures are built with ``matplotlib.figure.Figure`` directly, never
through pyplot, so plotting touches no global state and needs no display.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..core.errors import FrameworkNotInstalledError, NeuralCostError

if TYPE_CHECKING:
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.figure import Figure

#: File formats a plot is saved in, by the path's extension.
FORMATS = {".png": "png", ".svg": "svg"}


def new_figure(width: float, height: float) -> Figure:
    """A constrained-layout Figure with an Agg canvas, so text can be measured before saving."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise FrameworkNotInstalledError(
            "plotting needs matplotlib, which is not installed; install it with: pip install 'neural-cost[plot]'"
        ) from error
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)  # a renderer to measure text with, still no display and no pyplot
    return figure


def renderer_of(figure: Figure) -> RendererAgg:
    """The Agg renderer of a figure from ``new_figure``, to measure text extents with."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = figure.canvas
    assert isinstance(canvas, FigureCanvasAgg), "figures come from new_figure"
    renderer: RendererAgg = canvas.get_renderer()  # type: ignore[no-untyped-call]  # untyped in matplotlib's stubs
    return renderer


def format_of(path: str | os.PathLike[str]) -> str:
    """The format named by ``path``'s extension, or an error naming the extensions there are."""
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


def write_atomically(path: str | os.PathLike[str], write: Callable[[IO[Any]], object], *, binary: bool) -> Path:
    """Write a file through ``write(handle)``: complete or absent, never half-written (a temporary
    file in the same folder, synced, given the user's umask mode, then renamed over ``path``).
    An OSError (a folder at that path, a full disk) propagates; the temporary file never stays."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        handle: IO[Any] = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")
        with handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, file_mode(target))  # the user's umask, as a plain open() would give, not mkstemp's 0600
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def unwritable(what: str, path: str | os.PathLike[str], error: OSError) -> NeuralCostError:
    """The error for a result file that cannot be written, naming it and what to do."""
    return NeuralCostError(
        f"{what} {os.fspath(path)!r}: cannot write ({error.strerror or error}); "
        f"pass a path to a file in a writable directory"
    )


def save_figure(figure: Figure, path: str | os.PathLike[str]) -> Path:
    """Write ``figure`` to ``path`` (PNG or SVG by extension): complete or absent, never half-written."""
    file_format = format_of(path)
    try:
        return write_atomically(path, lambda handle: figure.savefig(handle, format=file_format), binary=True)
    except OSError as error:
        raise unwritable("plot path", path, error) from error
