"""Plot labels that can be read: short unique names, and places where no two labels overlap.

A roofline's points crowd: operations of one kind share an intensity, and every point sits
on the roofline itself, so names written beside the points pile up. The plot therefore
numbers its points and lists the names in a key beside the axes; only the numbers go on the
plot. Points that coincide on screen share one label ("2,5"). Each label is then placed by
a deterministic search: candidate offsets around its anchor, nearest first, in a preferred
order of directions, measured with the renderer, and the first one that stays inside the
axes and clears every label, marker and box already placed (and, if it can, every line)
wins. The search runs after the layout is fixed, so the measured boxes are the drawn ones.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.lines import Line2D
    from matplotlib.path import Path
    from matplotlib.text import Annotation
    from matplotlib.transforms import Bbox

#: Longest name in the key before older scope levels give way to "…".
NAME_LIMIT = 44
#: Offsets tried, in points from the anchor, nearest first.
_RADII = (3.0, 7.0, 12.0, 18.0, 26.0, 36.0, 48.0, 64.0)
#: Directions as (dx, dy); the first fit in this order wins at each radius.
BELOW_RIGHT = ((1, -1), (1, 0), (0, -1), (-1, -1), (1, 1), (-1, 0), (0, 1), (-1, 1))
ABOVE_LEFT = ((-1, 1), (0, 1), (-1, 0), (1, 1), (-1, -1), (1, 0), (0, -1), (1, -1))
#: Pixels of clearance kept around every box.
_PAD = 1.5
_HORIZONTAL: dict[int, Literal["left", "center", "right"]] = {1: "left", 0: "center", -1: "right"}
_VERTICAL: dict[int, Literal["bottom", "center", "top"]] = {1: "bottom", 0: "center", -1: "top"}
#: Radius from which a label is joined to its point by a thin line.
_LEADER_FROM = 12.0


def qualified_name(name: str, scope: str | None) -> str:
    """``scope/name`` as the text table writes it, without repeating a scope the name already carries."""
    if not scope or name == scope or name.startswith(f"{scope}/") or name.startswith(f"{scope}."):
        return name
    return f"{scope}/{name}"


def _levels(name: str) -> list[str]:
    """``"a/layers.0.conv/d"`` → ``["a/", "layers.0.", "conv/", "d"]``: scopes nest with "/" (JAX,
    TensorFlow) or "." (PyTorch modules); an index stays with the container it indexes."""
    levels: list[str] = []
    for part in re.split(r"(?<=[/.])", name):
        if levels and part.rstrip("/.").isdigit():
            levels[-1] += part
        elif part:
            levels.append(part)
    return levels


def _tail(levels: Sequence[str], keep: int) -> str:
    text = "".join(levels[-keep:])
    return text if keep >= len(levels) else "…" + text


def short_names(names: Sequence[str], limit: int = NAME_LIMIT) -> list[str]:
    """Each name cut to its innermost scope levels that fit in ``limit`` characters (at least
    the last level, itself cut from the left if longer), then lengthened until names that differ
    in full differ when shown; names equal in full stay equal (the key's numbers tell them apart)."""
    split = [_levels(name) for name in names]
    keep = []
    for levels in split:
        fits = [k for k in range(1, len(levels) + 1) if len(_tail(levels, k)) <= limit]
        keep.append(max(fits, default=1))
    while True:
        shown = [_tail(levels, k) for levels, k in zip(split, keep, strict=True)]
        clashing = [
            i
            for i, text in enumerate(shown)
            if keep[i] < len(split[i]) and any(shown[j] == text and names[j] != names[i] for j in range(len(names)))
        ]
        if not clashing:
            break
        for i in clashing:
            keep[i] += 1
    # an innermost level longer than the limit on its own keeps its end: that is where the op's name is
    return [
        "…" + text[-(limit - 1) :] if k == 1 and len(text) > limit else text
        for text, k in zip(shown, keep, strict=True)
    ]


def numbers_text(numbers: Sequence[int]) -> str:
    """``[1, 2, 3, 5]`` → ``"1–3,5"``: the numbers of points that share one place."""
    runs: list[list[int]] = []
    for number in sorted(numbers):
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ",".join(f"{r[0]}–{r[-1]}" if len(r) > 2 else ",".join(map(str, r)) for r in runs)


def clusters(points: Sequence[tuple[float, float]], radius: float) -> list[list[int]]:
    """Indices of display points grouped with the first earlier point within ``radius`` pixels."""
    groups: list[list[int]] = []
    for i, (x, y) in enumerate(points):
        for group in groups:
            x0, y0 = points[group[0]]
            if (x - x0) ** 2 + (y - y0) ** 2 <= radius**2:
                group.append(i)
                break
        else:
            groups.append([i])
    return groups


class Placer:
    """Places labels on ``axes`` one at a time, each clear of everything placed before it."""

    def __init__(self, axes: Axes, renderer: RendererBase) -> None:
        self.axes = axes
        self.renderer = renderer
        self.frame = axes.get_window_extent(renderer)
        self.taken: list[Bbox] = []
        self.lines: list[Path] = []
        self._points_per_pixel = 72.0 / axes.get_figure(root=True).dpi  # type: ignore[union-attr]

    def block(self, box: Bbox) -> None:
        """Keep labels off ``box`` (a marker, a note) in display pixels."""
        self.taken.append(box)

    def block_point(self, x: float, y: float, size: float) -> None:
        """Keep labels off a marker of ``size`` points drawn at data ``(x, y)``."""
        from matplotlib.transforms import Bbox

        cx, cy = self.axes.transData.transform((x, y))
        half = size / self._points_per_pixel / 2
        self.block(Bbox.from_extents(cx - half, cy - half, cx + half, cy + half))

    def avoid_line(self, line: Line2D) -> None:
        """Prefer places that do not cross ``line``."""
        from matplotlib.path import Path

        self.lines.append(Path(line.get_transform().transform(line.get_xydata())))

    def _clashes(self, box: Bbox) -> tuple[bool, bool]:
        padded = box.padded(_PAD)
        inside = (
            box.x0 >= self.frame.x0 and box.x1 <= self.frame.x1 and box.y0 >= self.frame.y0 and box.y1 <= self.frame.y1
        )
        hard = not inside or any(padded.overlaps(other) for other in self.taken)
        return hard, any(line.intersects_bbox(padded, filled=False) for line in self.lines)

    def place(
        self,
        text: str,
        anchor: tuple[float, float],
        directions: Sequence[tuple[int, int]] = BELOW_RIGHT,
        **style: object,
    ) -> Annotation:
        """Annotate data point ``anchor`` with ``text`` at the first candidate offset that clears
        everything placed so far (and every avoided line, when some candidate does); the label
        then counts as placed. Where nothing clears, the least-overlapping candidate is used."""
        label = self.axes.annotate(text, anchor, xytext=(0, 0), textcoords="offset points", **style)  # type: ignore[arg-type]
        best: tuple[tuple[int, float], float, tuple[int, int]] | None = None
        for radius in _RADII:
            for dx, dy in directions:
                self._put(label, radius, dx, dy)
                box = label.get_window_extent(self.renderer)
                hard, crossing = self._clashes(box)
                overlap = sum(_area(box.padded(_PAD), other) for other in self.taken)
                score = (2 * hard + crossing, overlap)
                if best is None or score < best[0]:
                    best = (score, radius, (dx, dy))
                if score == (0, 0.0):
                    break
            if best is not None and best[0] == (0, 0.0):
                break
        assert best is not None  # _RADII and directions are never empty
        _, radius, (dx, dy) = best
        self._put(label, radius, dx, dy)
        box = label.get_window_extent(self.renderer)
        self.taken.append(box)
        if radius >= _LEADER_FROM:
            self._leader(anchor, box)
        return label

    def _put(self, label: Annotation, radius: float, dx: int, dy: int) -> None:
        # a diagonal offset moves the corner of the text, not its centre, to the offset point
        label.xyann = (radius * dx, radius * dy)
        label.set_horizontalalignment(_HORIZONTAL[dx])
        label.set_verticalalignment(_VERTICAL[dy])

    def _leader(self, anchor: tuple[float, float], box: Bbox) -> None:
        # a straight line from the point to the nearest point of the label's box, in display
        # pixels turned back into data coordinates (the layout is fixed by now)
        ax, ay = self.axes.transData.transform(anchor)
        ex, ey = min(max(ax, box.x0), box.x1), min(max(ay, box.y0), box.y1)
        (x0, y0), (x1, y1) = self.axes.transData.inverted().transform([(ax, ay), (ex, ey)])
        self.axes.plot(
            [x0, x1], [y0, y1], color="grey", linewidth=0.5, zorder=2, gid="leader", scalex=False, scaley=False
        )


def _area(a: Bbox, b: Bbox) -> float:
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return width * height if width > 0 and height > 0 else 0.0
