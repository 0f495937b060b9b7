"""Exact integer shape arithmetic (issue 12, item 5): every closed form against the loop it
replaced, and records with dims no float or loop could handle counted at once, exactly."""

import math
import random
import time

import pytest

from neural_cost import HardwareSpec, Measurement, Operation, RecordError, ShapeError, analyze_gap, estimate_operations
from neural_cost.core.units import format_si
from neural_cost.costs import causal_pairs, sort_comparisons
from neural_cost.costs.conv import _real_taps
from neural_cost.costs.intmath import adaptive_window_total, ceil_times_log2, count_in_class, floor_sum
from neural_cost.costs.softmax_pool import adaptive_windows
from neural_cost.costs.spectral import fft_flops
from tests.property_cases import causal_pairs_by_loop, real_taps_by_loop

HUGE = 10**12  # a dimension a saved report may hold: a loop over it would never finish


def test_adaptive_window_total_is_n_plus_m_minus_gcd():
    rng = random.Random(12)
    cases = [(n, m) for n in range(40) for m in range(40)] + [
        (rng.randint(0, 5000), rng.randint(0, 5000)) for _ in range(500)
    ]
    for n, m in cases:
        assert adaptive_window_total(n, m) == sum(adaptive_windows(n, m)), (n, m)
    assert adaptive_window_total(8, 3) == 3 + 4 + 3 == 8 + 3 - 1  # [0,3) [2,6) [5,8); gcd 1
    assert adaptive_window_total(6, 3) == 6 == 6 + 3 - 3  # even tiles: gcd 3, no overlap


def test_multi_dim_window_sum_is_the_product_of_per_dim_sums():
    # Σ over output positions of ∏ per-dim window lengths, by brute force over the positions
    for sizes, outs in (((5, 7), (3, 2)), ((4, 6, 3), (3, 4, 2)), ((9,), (4,))):
        windows = [adaptive_windows(n, m) for n, m in zip(sizes, outs, strict=True)]
        brute = sum(math.prod(choice) for choice in _product(windows))
        op = Operation("a", "adaptive_pooling", ((2, *sizes),), (2, *outs), attrs={"spatial_dims": len(sizes)})
        assert op.cost.flops == 2 * brute


def _product(lists):
    if not lists:
        yield ()
        return
    for head in lists[0]:
        for rest in _product(lists[1:]):
            yield (head, *rest)


def test_floor_sum_matches_the_sum_it_names():
    rng = random.Random(5)
    for _ in range(3000):
        n, m, a, b = rng.randint(0, 30), rng.randint(1, 30), rng.randint(0, 60), rng.randint(0, 60)
        assert floor_sum(n, m, a, b) == sum((a * i + b) // m for i in range(n)), (n, m, a, b)
    assert floor_sum(4, 3, 2, 1) == 0 + 1 + 1 + 2  # ⌊1/3⌋ ⌊3/3⌋ ⌊5/3⌋ ⌊7/3⌋
    assert count_in_class(10, 1, 3) == 3  # 1, 4, 7
    assert count_in_class(1, 2, 3) == 0


def test_ceil_times_log2_is_the_least_power_of_two_above():
    # ⌈(n/d)·log2 b⌉ is the least c with 2^(c·d) ≥ b^n: checked in exact integers
    rng = random.Random(7)
    cases = [(n, d, b) for n in range(0, 40) for d in (1, 2, 3) for b in range(1, 40)]
    cases += [(rng.randint(1, 3000), rng.randint(1, 4), rng.randint(2, 3000)) for _ in range(300)]
    for n, d, b in cases:
        c = ceil_times_log2(n, d, b)
        assert 2 ** (c * d) >= b**n and (c == 0 or 2 ** ((c - 1) * d) < b**n), (n, d, b, c)


def test_counts_beyond_float_range_are_exact():
    length = 2**1030
    assert sort_comparisons(length) == 1030 * length  # ⌈L·log2 L⌉ = L·1030 exactly for L = 2^1030
    op = Operation("s", "sort", ((length,),), (length,))  # issue 12's reproducer: was an OverflowError
    assert op.cost.flops == 1030 * length
    assert fft_flops(2**1030) == 5 * 2**1030 * 1030
    three = 3**700  # log2 3^700 is irrational: the ceiling is the floor + 1, found by Decimal logs
    assert fft_flops(three) == ceil_times_log2(5 * three, 1, three)
    # 5N·log2 N lies in (5N·(bits - 1), 5N·bits) for N between 2^(bits-1) and 2^bits
    assert 5 * three * (three.bit_length() - 1) < fft_flops(three) < 5 * three * three.bit_length()


def test_fft_rounds_up_where_the_float_rounded_down():
    # 5·147,776·log2 147,776 = 12,688,825.000000138...: the float path rounded it to ...825, the
    # convention (rounded up) is ...826
    assert fft_flops(147_776) == 12_688_826


def test_lhs_dilated_taps_closed_form_matches_the_pair_count():
    rng = random.Random(3)
    for _ in range(4000):
        args = (rng.randint(0, 12), rng.randint(0, 12), rng.randint(1, 9), rng.randint(1, 12), rng.randint(1, 9))
        pad_low = rng.randint(-15, 15)
        assert _real_taps(*args, pad_low) == real_taps_by_loop(*args, pad_low), (*args, pad_low)


def test_tiled_causal_pairs_closed_form_matches_the_tile_loop():
    rng = random.Random(9)
    for _ in range(4000):
        q_len, k_len = rng.randint(0, 60), rng.randint(0, 60)
        alignment = rng.choice(["top_left", "bottom_right"])
        blocks = (rng.randint(1, 70), rng.randint(1, 70))
        assert causal_pairs(q_len, k_len, alignment, blocks) == causal_pairs_by_loop(q_len, k_len, alignment, blocks)


def _fast(build):
    start = time.perf_counter()
    result = build()
    assert time.perf_counter() - start < 1.0, "a rule looped over a dimension"
    return result


def test_rules_never_loop_over_a_dimension():
    # adaptive pooling of 10^12 into 10^12 - 1 windows: Σ lengths = n + m - gcd(n, m) = 2·10^12 - 2
    op = _fast(lambda: Operation("a", "adaptive_pooling", ((1, HUGE),), (1, HUGE - 1), attrs={"spatial_dims": 1}))
    assert op.cost.flops == 2 * HUGE - 2
    area = _fast(lambda: Operation("i", "interpolate", ((1, 1, HUGE),), (1, 1, HUGE - 1), attrs={"mode": "area"}))
    assert area.cost.flops == 2 * HUGE - 2
    # causal tiles of one query each: Σ_{i<S} (i+1) keys = S(S+1)/2 pairs per head
    q = (1, 1, HUGE, 8)
    attrs = {"causal": True, "skips_masked": True, "causal_blocks": (1, 1)}
    attention = _fast(lambda: Operation("t", "attention", (q, q, q), q, attrs=attrs))
    assert attention.cost.transcendentals == HUGE * (HUGE + 1) // 2
    # lhs-dilated conv, stride 10^12: input (2,) dilated to 10^12 + 1, kernel 10^12, low pad
    # 10^12 - 1 → 2 outputs; element i at i·10^12 meets tap j when i·10^12 + 10^12 - 1 - j ≡ 0
    # (mod 10^12): j = 10^12 - 1 for both elements, 2 real taps
    conv_attrs = {"lhs_dilation": HUGE, "stride": HUGE, "padding": ((HUGE - 1, 0),)}
    conv = _fast(lambda: Operation("c", "conv", ((1, 1, 2), (1, 1, HUGE)), (1, 1, 2), attrs=conv_attrs))
    assert conv.cost.flops == 2 * 2


def test_antialias_support_stays_in_integers():
    # 2·⌈(t/2)·(in/out)⌉ + 1 taps along the height for a downscale by 10^400 / 2
    op = Operation(
        "i", "interpolate", ((1, 1, 10**400, 4),), (1, 1, 2, 2), attrs={"mode": "bilinear", "antialias": True}
    )
    width_taps, height_taps = 2 * 2 + 1, 2 * (10**400 // 2) + 1  # ⌈1·4/2⌉ = 2; ⌈1·10^400/2⌉
    assert op.cost.flops == 10**400 * 2 * (2 * width_taps - 1) + 2 * 2 * (2 * height_taps - 1)


def test_cdist_takes_a_p_of_any_size():
    op = Operation("d", "cdist", ((3, 4), (5, 4)), (3, 5), attrs={"p": 10**400})
    assert op.cost.flops == 15 * 4 * 4  # other p: 4M per pair, 15 pairs


def test_analyze_gap_names_the_operation_whose_count_exceeds_float_range():
    big = 10**200
    op = Operation("huge_matmul", "matmul", ((big, big), (big, big)), (big, big))
    estimate = estimate_operations([op])
    assert estimate.flops == 2 * big**3  # the estimate itself is exact
    with pytest.raises(RecordError, match=r"operation 'huge_matmul' \(matmul\): FLOPs in float32 .*10\^600.*float"):
        analyze_gap(estimate, Measurement((0.01,)), HardwareSpec("chip", 1e12, 1e11))
    assert format_si(estimate.flops, "FLOP") == "2.00e+600 FLOP"


def test_adaptive_pooling_of_an_empty_dim_into_windows_is_an_error():
    # every window would be empty: was counted as -1 comparisons for max
    with pytest.raises(ShapeError, match="empty spatial dim"):
        Operation("a", "adaptive_pooling", ((0,),), (1,), attrs={"spatial_dims": 1, "mode": "max"})
    assert Operation("a", "adaptive_pooling", ((0,),), (0,), attrs={"spatial_dims": 1}).cost.flops == 0
