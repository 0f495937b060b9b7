"""Decimal SI formatting (1 MB = 10⁶ bytes, 1 GFLOP = 10⁹ FLOPs), shared by text and findings."""

from __future__ import annotations

import math
from decimal import Decimal

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
#: Ints of more bits may not convert to a float (the largest is just under 2**1024).
_FLOAT_BITS = 1023


def format_si(value: float, unit: str) -> str:
    """``49152000, "FLOP"`` → ``"49.2 MFLOP"``: three significant digits, decimal prefixes.
    An int too large for a float (counts are exact ints of any size) is written as ``1.00e+400``."""
    if isinstance(value, int) and value.bit_length() > _FLOAT_BITS:
        return f"{Decimal(value):.2e} {unit}"
    if not math.isfinite(value):
        return f"{value} {unit}"
    magnitude = abs(value)
    for scale, prefix in _PREFIXES:
        if magnitude >= scale * 0.9995:
            return f"{_three_digits(value / scale)} {prefix}{unit}"
    if float(value).is_integer():
        return f"{int(value)} {unit}"
    return f"{_three_digits(value)} {unit}"


def _three_digits(value: float) -> str:
    magnitude = abs(value)
    if magnitude >= 99.95:
        return f"{value:.0f}"
    if magnitude >= 9.995:
        return f"{value:.1f}"
    return f"{value:.2f}"


def format_seconds(seconds: float) -> str:
    """Adaptive time: ``0.000182`` → ``"182.0 µs"``, ``0.0123`` → ``"12.300 ms"``."""
    if not math.isfinite(seconds):
        return str(seconds)
    magnitude = abs(seconds)
    if magnitude == 0:
        return "0 s"
    # thresholds sit where rounding would otherwise print "1000.0 µs"
    if magnitude >= 1 - 5e-4:
        return f"{seconds:.3f} s"
    if magnitude >= 1e-3 - 5e-7:
        return f"{seconds * 1e3:.3f} ms"
    if magnitude >= 1e-6 - 5e-11:
        return f"{seconds * 1e6:.1f} µs"
    return f"{seconds * 1e9:.1f} ns"


def plural(count: int, unit: str) -> str:
    """``1, "operations"`` → ``"1 operation"``; units are given in the plural."""
    text = f"{count:,}"
    return f"{text} {unit[:-1]}" if count == 1 and unit.endswith("s") else f"{text} {unit}"


def format_percent(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"


def format_percent_down(part: int, whole: int) -> str:
    """``part / whole`` as a percentage rounded *down* to 0.1%, in exact integer arithmetic.

    For coverage: 9,999 of 10,000 must not print as a complete "100.0%", nor 89,996 of
    100,000 as "90.0%" under a 90% threshold. An empty whole is fully covered.
    """
    if whole <= 0:
        return "100.0%"
    tenths = part * 1000 // whole
    return f"{tenths // 10}.{tenths % 10}%"


def format_int(value: int) -> str:
    return f"{value:,}"
