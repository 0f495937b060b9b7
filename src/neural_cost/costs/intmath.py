"""Exact integer arithmetic the cost rules share: no floats, no loops over a dimension.

Counts are Python ints of any size, so a rule must never pass one through a float (a
dimension of 2**1030 has no float) nor loop once per element of a dimension (a saved report
may hold a dimension of 10**12 and must still load at once). These closed forms replace
both; each is checked against the plain loop it replaces in ``tests/costs/test_intmath.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import ROUND_FLOOR, Decimal, localcontext

#: Decimal digits of a count of ``b`` bits is at most ⌈b·log10 2⌉ ≤ b·30103/100000 + 1.
_LOG10_2_NUM, _LOG10_2_DEN = 30_103, 100_000
#: Operands small enough for the float fast path (a float holds them exactly).
_FAST_BITS = 52


def _digits(value: int) -> int:
    return value.bit_length() * _LOG10_2_NUM // _LOG10_2_DEN + 1


def ceil_times_log2(numerator: int, denominator: int, base: int) -> int:
    """⌈(numerator / denominator) · log2 base⌉, exactly, for numerator ≥ 0, denominator ≥ 1, base ≥ 1.

    A power-of-two base gives a rational value, ceiled in integers. Any other base has an
    irrational log2, so the value is never an integer and its ceiling is its floor + 1; the
    floor comes from Decimal logarithms (correctly rounded) at a precision a few dozen digits
    beyond the value's integer part, doubled until an error bound of a thousand units in the
    last place cannot move it across an integer."""
    if numerator < 0 or denominator < 1 or base < 1:
        raise ValueError(f"ceil_times_log2({numerator}, {denominator}, {base}): needs n >= 0, d >= 1, base >= 1")
    if numerator == 0 or base == 1:
        return 0
    if base & (base - 1) == 0:  # base = 2**e: (n/d)·e is rational
        return -(-numerator * (base.bit_length() - 1) // denominator)
    if numerator.bit_length() <= _FAST_BITS and base.bit_length() <= _FAST_BITS:
        # Fast path: a float value is within a relative 2**-40 of the true one (libm's log2 is
        # within an ulp, 2**-52), so its floor is exact unless an integer lies in that band.
        approx = numerator * math.log2(base) / denominator
        low, high = math.floor(approx * (1 - 2.0**-40)), math.floor(approx * (1 + 2.0**-40))
        if low == high:
            return low + 1
    precision = _digits(numerator) + _digits(base.bit_length()) + 30
    while True:
        with localcontext() as context:
            context.prec = precision
            value = Decimal(numerator) * Decimal(base).ln() / (Decimal(2).ln() * denominator)
            margin = Decimal(10) ** (value.adjusted() - precision + 4)
            low = int((value - margin).to_integral_value(rounding=ROUND_FLOOR))
            high = int((value + margin).to_integral_value(rounding=ROUND_FLOOR))
        if low == high:
            return low + 1
        precision *= 2


def floor_sum(count: int, modulus: int, slope: int, offset: int) -> int:
    """Σ_{i < count} ⌊(slope·i + offset) / modulus⌋ for count ≥ 0, modulus ≥ 1, slope ≥ 0,
    offset ≥ 0, in O(log) steps: the Euclid-like reduction of the AtCoder Library's
    ``floor_sum`` (the lattice points under a line, counted by swapping its axes)."""
    if count < 0 or modulus < 1 or slope < 0 or offset < 0:
        raise ValueError(f"floor_sum({count}, {modulus}, {slope}, {offset}): needs n, a, b >= 0 and m >= 1")
    total = 0
    while True:
        if slope >= modulus:
            total += count * (count - 1) // 2 * (slope // modulus)
            slope %= modulus
        if offset >= modulus:
            total += count * (offset // modulus)
            offset %= modulus
        top = slope * count + offset
        if top < modulus:
            return total
        count, offset = divmod(top, modulus)
        modulus, slope = slope, modulus


def adaptive_window_total(size: int, out: int) -> int:
    """Σ of the window lengths of adaptive pooling of ``size`` inputs into ``out`` outputs.

    Window i is [⌊i·n/m⌋, ⌈(i+1)·n/m⌉); its length is ⌈(i+1)·n/m⌉ - ⌊i·n/m⌋. Summed over i,
    the ceilings and floors telescope to n plus one for each i+1 in 1..m whose (i+1)·n is not a
    multiple of m, of which there are m - gcd(n, m): n + m - gcd(n, m) (0 when either is 0)."""
    return size + out - math.gcd(size, out)


def adaptive_window_elements(sizes: Sequence[int], outs: Sequence[int]) -> int:
    """Σ over the outputs of a multi-dim adaptive pooling of their windows' elements: an
    output's window is the product of its per-dim windows, so the sum is the product over
    dims of each dim's ``adaptive_window_total``."""
    return math.prod(adaptive_window_total(n, m) for n, m in zip(sizes, outs, strict=True))


def count_in_class(length: int, residue: int, period: int) -> int:
    """How many of 0..length-1 are ≡ ``residue`` (mod ``period``), for 0 ≤ residue < period."""
    return max(0, (length - residue + period - 1) // period)
