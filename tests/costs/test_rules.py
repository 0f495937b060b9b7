"""Every registered kind has a rule, a stated convention, and one hand-checked example here.

The detailed cases live beside this file: test_contractions.py (linear, matmul, attention),
test_conv_rules.py (conv, pooling, pooling_backward), test_pointwise_rules.py (elementwise, reduce, softmax,
cumulative), test_norm_rules.py, test_memory_rules.py (embedding, gather, scatter, copy),
test_other_rules.py (sort, rng, custom), test_estimate_rules.py and test_rule_errors.py.
"""

from __future__ import annotations

import pytest

from neural_cost import Operation, known_kinds

from .test_new_kind_examples import NEW_KIND_EXAMPLES

F32 = "float32"

# kind → (record, FLOPs, read bytes, write bytes), every figure derived by hand; float32 = 4 bytes.
EXAMPLES = {
    "linear": (
        Operation("l", "linear", ((2, 3), (3, 4)), (2, 4)),
        48,  # 2*2*3*4 = 48
        72,  # 4 * (6 + 12) = 72
        32,  # 4 * 8 = 32
    ),
    "matmul": (
        Operation("m", "matmul", ((32, 16), (16, 8)), (32, 8)),
        8_192,  # 2*32*16*8 = 8,192
        2_560,  # 4 * (512 + 128) = 2,560
        1_024,  # 4 * 256 = 1,024
    ),
    "attention": (
        Operation(
            "a",
            "attention",
            ((1, 2, 4, 8), (1, 1, 4, 8), (1, 1, 4, 8)),
            (1, 2, 4, 8),
            attrs={"causal": True, "skips_masked": True},
        ),
        # 2 query heads * (10 pairs (1+2+3+4) * (2*(8 + 8) matmul + 1 scale + 5 softmax) - 2 per row * 4 rows)
        744,  # 2 * (10 * 38 - 8) = 744
        512,  # 4 * (64 + 32 + 32) = 512
        256,  # 4 * 64 = 256
    ),
    "conv": (
        Operation("c", "conv", ((1, 1, 5, 5), (1, 1, 3, 3)), (1, 1, 3, 3)),
        162,  # 2 * 9 outputs * 1 channel * 9 taps = 162
        136,  # 4 * (25 + 9) = 136
        36,  # 4 * 9 = 36
    ),
    "pooling": (
        Operation("p", "pooling", ((1, 1, 4, 4),), (1, 1, 2, 2), attrs={"kernel": 2}),
        12,  # 4 outputs * (4 - 1) comparisons = 12
        64,  # 4 * 16 = 64
        16,  # 4 * 4 = 16
    ),
    "pooling_backward": (
        Operation("pb", "pooling_backward", ((1, 1, 2, 2), (1, 1, 4, 4)), (1, 1, 4, 4), attrs={"kernel": 2}),
        16,  # 4 gradient elements * (3 comparisons + 1 add) = 16
        80,  # 4 * (4 + 16) = 80
        64,  # 4 * 16 = 64: the output is written whole
    ),
    "embedding": (
        Operation("e", "embedding", ((10, 4), (3,)), (3, 4)),
        0,  # pure movement
        72,  # 3 rows * 4 * 4 bytes + 3 int64 indices * 8 = 48 + 24 = 72
        48,  # 4 * 12 = 48
    ),
    "gather": (
        Operation("g", "gather", ((10, 4), (3,)), (3, 4)),
        0,  # pure movement
        72,  # 12 touched elements * 4 + 3 int64 indices * 8 = 48 + 24 = 72
        48,  # 4 * 12 = 48
    ),
    "scatter": (
        Operation("s", "scatter", ((10, 4), (3, 1), (3, 4)), (10, 4), attrs={"mode": "add"}),
        12,  # one add per update: 3*4 = 12
        120,  # int64 indices 3 * 8 = 24 + updates 12 * 4 = 48 + old touched values 12 * 4 = 48 → 120
        48,  # 12 touched elements * 4 = 48
    ),
    "copy": (
        Operation("t", "copy", ((2, 3),), (3, 2)),
        0,  # a materialised transpose moves data only
        24,  # 4 * 6 = 24
        24,  # 4 * 6 = 24
    ),
    "layernorm": (
        Operation("ln", "layernorm", ((2, 8),), (2, 8)),
        84,  # 2 rows * (5*8 + 2) = 84
        64,  # 4 * 16 = 64
        64,  # 4 * 16 = 64
    ),
    "rmsnorm": (
        Operation("rms", "rmsnorm", ((2, 8),), (2, 8)),
        52,  # 2 rows * (3*8 + 2) = 52
        64,  # 4 * 16 = 64
        64,  # 4 * 16 = 64
    ),
    "groupnorm": (
        Operation("gn", "groupnorm", ((2, 4, 3),), (2, 4, 3), attrs={"groups": 2}),
        128,  # rows 2*2 = 4 of L = 24 / 4 = 6: 4 * (5*6 + 2) = 128
        96,  # 4 * 24 = 96
        96,  # 4 * 24 = 96
    ),
    "batchnorm": (
        Operation("bn", "batchnorm", ((2, 4, 3),), (2, 4, 3)),
        56,  # inference: 2 * 24 elements + 2 * 4 channels = 56
        96,  # 4 * 24 = 96
        96,  # 4 * 24 = 96
    ),
    "sort": (
        Operation("so", "sort", ((2, 8),), (2, 8)),
        48,  # 2 rows * 8 * log2 8 = 2 * 24 = 48
        64,  # 4 * 16 = 64
        64,  # 4 * 16 = 64
    ),
    "rng": (
        Operation("r", "rng", (), (4,), attrs={"generator": "threefry2x32"}),
        230,  # 4 * 32 = 128 bits = 2 blocks of 64; 2 * 115 = 230 integer ops
        0,  # no inputs
        16,  # 4 * 4 = 16
    ),
    "custom": (
        Operation("cu", "custom", ((3,),), (3,), attrs={"flops": 7}),
        7,  # as given
        12,  # default traffic: 4 * 3 = 12
        12,  # 4 * 3 = 12
    ),
    "elementwise": (
        Operation("ew", "elementwise", ((2, 3), (3,)), (2, 3)),
        6,  # 1 per output element: 2*3 = 6
        36,  # 4 * (6 + 3) = 36
        24,  # 4 * 6 = 24
    ),
    "reduce": (
        Operation("rd", "reduce", ((2, 3),), (2,), attrs={"axes": (1,)}),
        4,  # 2 rows * (3 - 1) = 4
        24,  # 4 * 6 = 24
        8,  # 4 * 2 = 8
    ),
    "softmax": (
        Operation("sm", "softmax", ((2, 3),), (2, 3)),
        26,  # 2 rows * (5*3 - 2) = 26
        24,  # 4 * 6 = 24
        24,  # 4 * 6 = 24
    ),
    "cumulative": (
        Operation("cs", "cumulative", ((2, 3),), (2, 3)),
        4,  # 2 rows * (3 - 1) = 4
        24,  # 4 * 6 = 24
        24,  # 4 * 6 = 24
    ),
}

EXAMPLES.update(NEW_KIND_EXAMPLES)  # the kinds that replaced adapters' custom formulas (issue 11)
# One device's all-reduce over 4 devices of (8, 16) float32 = 512 B: reduction FLOPs 3/4·128 = 96;
# input read 512 B, output written 512 B (wire 2·3/4·512 = 768 B: tests/costs/test_collectives.py).
EXAMPLES["collective"] = (
    Operation("ar", "collective", ((8, 16),), (8, 16), "float32", attrs={"collective": "all_reduce", "group_size": 4}),
    96,
    512,
    512,
)


# isin of 4 float32 elements in a set of 1: 1 < 10·4^0.145, pairs: 4·(2·1 − 1) = 4 compares;
# reads 4·4 + 4·1 = 20 B, writes 4·4 = 16 B. A set of 64 among 16 elements: 64 ≥ 10·16^0.145 ≈ 14.9,
# sorted: ⌈16·4⌉ + ⌈64·6⌉ + ⌈80·log2 80⌉ (= 506) + 79 = 64 + 384 + 506 + 79 = 1,033.
EXAMPLES["membership"] = (Operation("isin", "membership", ((4,), (1,)), (4,)), 4, 20, 16)


def test_membership_sorts_a_large_test_set():
    op = Operation("isin", "membership", ((16,), (64,)), (16,))
    assert op.cost.flops == 64 + 384 + 506 + 79
    assert Operation("isin", "membership", ((16,),), (16,), attrs={"tests": 1}).cost.flops == 16


def test_every_registered_kind_has_an_example_and_a_convention():
    kinds = known_kinds()
    assert set(EXAMPLES) == set(kinds), "add a hand-checked example for each new kind"
    for kind, summary in kinds.items():
        assert isinstance(summary, str) and len(summary) > 20, kind


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_one_hand_checked_example_per_kind(kind):
    op, flops, read_bytes, write_bytes = EXAMPLES[kind]
    assert op.kind == kind
    expected_by_dtype = {("uint32" if kind == "rng" else F32): flops} if flops else {}
    assert dict(op.cost.flops_by_dtype) == expected_by_dtype
    assert (op.cost.read_bytes, op.cost.write_bytes) == (read_bytes, write_bytes)
    assert op.cost.flops == flops
