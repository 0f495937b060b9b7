"""A link measured: timed collectives fitted to ``seconds = latency + wire bytes / bandwidth``.

Framework-neutral: a probe (``adapters/_jax/collective_probe.py`` for XLA's host devices)
times collectives of several sizes and hands over ``(wire bytes, seconds)`` pairs, wire
bytes counted per device as ``costs/collectives.py`` does (a ring all-reduce of ``p`` bytes
over ``n`` devices sends 2(n−1)/n × p). The fit is least squares on the *relative* error,
minimising Σ((latency + wᵢ/bandwidth − tᵢ)/tᵢ)², so a 4 KiB sample counts as much as a
16 MiB one (plain least squares would let the largest samples set both numbers and leave the
latency to chance). A negative fitted latency is pinned at 0 and the slope refitted through
the origin; the source says so. Each sample's residual is (predicted − measured) / measured,
and the worst of them goes into the Interconnect's source, whatever it is: a link the model
describes badly says so rather than hiding it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..core.errors import MeasurementError
from ..core.units import format_si
from .interconnect import Interconnect

#: The worst relative residual a fit may have and still be called good (issue 16's band).
GOOD_FIT = 0.25


@dataclass(frozen=True, slots=True)
class InterconnectFit:
    """``seconds = latency_seconds + wire_bytes / bandwidth`` fitted to timed collectives."""

    samples: tuple[tuple[float, float], ...]  # (wire bytes, seconds), as given
    bandwidth: float  # B/s
    latency_seconds: float
    residuals: tuple[float, ...]  # (predicted − measured) / measured, one per sample
    latency_pinned: bool = False  # the unconstrained fit gave a negative latency

    @property
    def worst_residual(self) -> float:
        return max(abs(r) for r in self.residuals)

    def predicted(self, wire_bytes: float) -> float:
        return self.latency_seconds + wire_bytes / self.bandwidth


def _checked(samples: Iterable[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    pairs = tuple(samples)
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise MeasurementError(f"a sample must be a (wire bytes, seconds) pair, not {pair!r}")
        wire, seconds = pair
        if isinstance(wire, bool) or not isinstance(wire, (int, float)) or not math.isfinite(wire) or wire < 0:
            raise MeasurementError(f"sample {pair!r}: wire bytes must be a finite number ≥ 0")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
            raise MeasurementError(f"sample {pair!r}: seconds must be a finite positive number")
        if seconds <= 0:
            raise MeasurementError(f"sample {pair!r}: seconds must be a finite positive number")
    if len({wire for wire, _ in pairs}) < 2:
        raise MeasurementError(
            f"fitting a latency and a bandwidth needs collectives of at least two sizes; got {len(pairs)} "
            f"sample(s) of {len({wire for wire, _ in pairs})} size(s)"
        )
    return pairs


def fit_interconnect(samples: Iterable[tuple[float, float]]) -> InterconnectFit:
    """Fit ``(wire bytes, seconds)`` samples (see the module docstring); errors name the bad sample."""
    pairs = _checked(samples)
    # Relative least squares: with u = 1/t and v = w/t, minimise Σ(a·u + b·v − 1)², b = 1/bandwidth.
    u = [1.0 / t for _, t in pairs]
    v = [w / t for w, t in pairs]
    suu = math.fsum(x * x for x in u)
    suv = math.fsum(x * y for x, y in zip(u, v, strict=True))
    svv = math.fsum(y * y for y in v)
    su, sv = math.fsum(u), math.fsum(v)
    det = suu * svv - suv * suv
    latency, slope = (su * svv - suv * sv) / det, (suu * sv - suv * su) / det
    pinned = latency < 0
    if pinned:  # through the origin: minimise Σ(b·v − 1)²
        latency, slope = 0.0, sv / svv
    if not slope > 0:
        raise MeasurementError(
            "the timed collectives do not take longer as they move more bytes (fitted seconds per byte "
            f"{slope:.3g}), so no bandwidth can be fitted; time larger sizes, or repeat on a quieter machine"
        )
    residuals = tuple((latency + w * slope - t) / t for w, t in pairs)
    return InterconnectFit(pairs, 1.0 / slope, latency, residuals, pinned)


def _sizes(wires: Sequence[float]) -> str:
    distinct = sorted(set(wires))
    return f"{format_si(distinct[0], 'B')} … {format_si(distinct[-1], 'B')}"


def describe_fit(fit: InterconnectFit, what: str = "collectives") -> str:
    """The source line of a fitted link: how many samples, their sizes, the fit and its worst residual."""
    wires = [w for w, _ in fit.samples]
    text = (
        f"measured: fit of {len(fit.samples)} {what} ({_sizes(wires)} wire bytes per device) to seconds = "
        f"latency + wire bytes / bandwidth, least squares on relative error; worst residual {fit.worst_residual:.1%}"
    )
    if fit.latency_pinned:
        text += "; the fitted latency was negative and is pinned at 0 (the slope refitted through the origin)"
    if fit.worst_residual > GOOD_FIT:
        text += (
            f"; a POOR fit (worst residual above {GOOD_FIT:.0%}): one latency and one bandwidth do not describe "
            f"these times well, so use the figures with care"
        )
    return text


def calibrate_interconnect(
    samples: Iterable[tuple[float, float]],
    *,
    name: str,
    what: str = "collectives",
    method: str = "",
) -> tuple[Interconnect, InterconnectFit]:
    """An Interconnect fitted to timed collectives: ``samples`` are (wire bytes per device, seconds).

    ``what`` names the collectives in the source ("all-reduces over 4 host devices"), ``method``
    how they were timed. The source always carries the worst residual, and says "POOR fit" above
    25%.
    """
    fit = fit_interconnect(samples)
    source = describe_fit(fit, what) + (f"; {method}" if method else "")
    return Interconnect(name, fit.bandwidth, fit.latency_seconds, source), fit
