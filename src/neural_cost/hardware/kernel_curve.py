"""The curve of a kernel class: measured time against roofline time, monotone, in log-log space
(``kernel_model``'s module docstring says how a class's two curves make its expected time)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import HardwareError
from ._isotonic import median as _median
from ._isotonic import pava as _pava

#: Knots per curve at most, and points per knot at least.
MAX_KNOTS = 10
POINTS_PER_KNOT = 3
#: Four or five points spanning this much (log10: 2×) make two knots, not one (docs/expected.md).
SPLIT_SPAN = math.log10(2)


@dataclass(frozen=True, slots=True)
class Curve:
    """log10(measured seconds) against log10(roofline seconds): knots, x increasing, y nondecreasing."""

    xs: tuple[float, ...]
    ys: tuple[float, ...]

    def __post_init__(self) -> None:
        if not all(math.isfinite(v) for v in (*self.xs, *self.ys)):
            raise HardwareError(f"a kernel-model curve's knots must be finite numbers: {self.xs!r}, {self.ys!r}")
        if not self.xs or len(self.xs) != len(self.ys):
            raise HardwareError(f"a kernel-model curve needs as many knots as values, got {self.xs!r}, {self.ys!r}")
        if any(b <= a for a, b in zip(self.xs, self.xs[1:], strict=False)):
            raise HardwareError(f"a kernel-model curve's knots must increase: {self.xs!r}")
        if any(b < a for a, b in zip(self.ys, self.ys[1:], strict=False)):
            raise HardwareError(f"a kernel-model curve must not decrease: {self.ys!r}")

    def __call__(self, roofline_seconds: float) -> float:
        """Expected seconds for a kernel whose roofline time on this side is ``roofline_seconds``."""
        if roofline_seconds <= 0:
            return 10 ** self.ys[0]  # no work on this side: the overhead floor
        x = math.log10(roofline_seconds)
        xs, ys = self.xs, self.ys
        if x <= xs[0]:
            return 10 ** ys[0]
        if x >= xs[-1]:
            return self._beyond(roofline_seconds)
        for i in range(1, len(xs)):
            if x <= xs[i]:
                t = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
                return float(10 ** (ys[i - 1] + t * (ys[i] - ys[i - 1])))
        raise AssertionError("unreachable")

    def scaled(self, roofline_seconds: float, floor: float) -> float:
        """As ``__call__``, but below the first knot in proportion to the work, down to ``floor``."""
        if roofline_seconds < 10 ** self.xs[0]:  # a floor above the knot's time would step down at it
            lowest = min(floor, 10 ** self.ys[0])
            return max(lowest, 10 ** self.ys[0] * max(roofline_seconds, 0.0) / 10 ** self.xs[0])
        return self(roofline_seconds)

    def _beyond(self, roofline_seconds: float) -> float:
        """Past the last knot, time grows by the last segment's marginal cost per roofline second, kept
        between min(1, ratio) and the ratio (measured ÷ roofline) at the last knot: a last point of overhead
        is not stretched into that slowdown for work a thousand times larger; one knot adds work at the peak."""
        r_last, t_last = 10 ** self.xs[-1], 10 ** self.ys[-1]
        ratio = t_last / r_last
        marginal = 1.0
        if len(self.xs) > 1:
            r_prev, t_prev = 10 ** self.xs[-2], 10 ** self.ys[-2]
            marginal = (t_last - t_prev) / (r_last - r_prev)
        slope = min(max(marginal, min(1.0, ratio)), ratio)
        return float(t_last + (roofline_seconds - r_last) * slope)

    def to_dict(self) -> dict[str, Any]:
        return {"log10_roofline_seconds": list(self.xs), "log10_seconds": list(self.ys)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Curve:
        return cls(
            tuple(float(x) for x in data["log10_roofline_seconds"]), tuple(float(y) for y in data["log10_seconds"])
        )


def fit_curve(
    pairs: Iterable[tuple[float, float]], *, by_ratio: bool = False, per_decade: bool = False
) -> Curve | None:
    """A monotone curve through ``(roofline seconds, measured seconds)`` pairs, or None when
    fewer than ``POINTS_PER_KNOT`` pairs have a positive roofline time.

    In log-log space the points, ordered by roofline time, are cut into at most ``MAX_KNOTS`` bins of at least
    ``POINTS_PER_KNOT`` (four or five spanning ``SPLIT_SPAN``: two); each bin is one knot at its median roofline
    time and its median measured time, or (``by_ratio``) its median measured ÷ roofline time at that roofline
    time; a stalled run moves no knot. With ``per_decade``, a knot for every decade the points span at least
    (as many as points at most): a class of few points spread wide. Knot values are made nondecreasing
    (weighted isotonic)."""
    data = sorted((math.log10(r), math.log10(m)) for r, m in pairs if r > 0 and m > 0)
    if len(data) < POINTS_PER_KNOT:
        return None
    knots = max(1, min(MAX_KNOTS, len(data) // POINTS_PER_KNOT))
    if per_decade:
        knots = max(knots, min(MAX_KNOTS, len(data), math.ceil(data[-1][0] - data[0][0])))
    if knots == 1 and len(data) >= 4 and data[-1][0] - data[0][0] >= SPLIT_SPAN:
        knots = 2  # the halves' slope carries the curve past its points (Curve._beyond), not the peak
    xs: list[float] = []
    ys: list[float] = []
    weights: list[float] = []
    for k in range(knots):
        lo, hi = k * len(data) // knots, (k + 1) * len(data) // knots
        x = _median([x for x, _ in data[lo:hi]])
        y = x + _median([y - x for x, y in data[lo:hi]]) if by_ratio else _median([y for _, y in data[lo:hi]])
        if xs and x <= xs[-1]:  # equal x medians: one knot, the two bins' values weighed together
            total = weights[-1] + (hi - lo)
            ys[-1] = (ys[-1] * weights[-1] + y * (hi - lo)) / total
            weights[-1] = total
            continue
        xs, ys, weights = [*xs, x], [*ys, y], [*weights, hi - lo]
    fitted = _pava(ys, weights)
    return Curve(tuple(xs), tuple(max(fitted[: i + 1]) for i in range(len(fitted))))
