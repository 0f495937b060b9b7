"""linear, matmul (numpy and dot_general semantics) and attention, with closed-form counts.

Every expected number is derived by hand beside its assertion from the convention in
ARCHITECTURE.md ("Counting conventions": a multiply-add is 2 FLOPs, matmul M×K×N = 2·M·K·N,
every input read once and the output written once) and the rule's docstring. The torch
cross-checks run FlopCounterMode on real tensors of the same shapes.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from neural_cost import Operation, estimate_operations
from neural_cost.core.errors import RecordError, ShapeError
from neural_cost.costs import causal_pairs


def test_seed_linear_positional_form_charges_float16():
    op = Operation("classifier", "linear", ((32, 768), (768, 1000)), (32, 1000), 2)
    assert op.dtype == "float16"  # itemsize 2 → float16
    assert op.cost.flops_by_dtype == {"float16": 49_152_000}  # 2 * 32 * 768 * 1000 = 49,152,000
    assert op.cost.read_bytes == 1_585_152  # 2 * (32*768 + 768*1000) = 2 * (24,576 + 768,000) = 1,585,152
    assert op.cost.write_bytes == 64_000  # 2 * 32 * 1000 = 64,000
    assert op.cost.dense_flops is None  # only attention distinguishes executed from dense


def test_linear_out_in_layout_and_leading_dims():
    op = Operation(
        "proj", "linear", ((4, 10, 64), (128, 64)), (4, 10, 128), "bfloat16", attrs={"weight_layout": "out_in"}
    )
    assert op.cost.flops_by_dtype == {"bfloat16": 655_360}  # 2 * (4*10) * 64 * 128 = 655,360
    assert op.cost.read_bytes == 21_504  # 2 * (4*10*64 + 128*64) = 2 * (2,560 + 8,192) = 21,504
    assert op.cost.write_bytes == 10_240  # 2 * 4*10*128 = 10,240


def test_matmul_float32_intensity_is_exactly_16_over_7():
    op = Operation("mm", "matmul", ((32, 16), (16, 8)), (32, 8), "float32")
    assert op.cost.flops_by_dtype == {"float32": 8_192}  # 2 * 32 * 16 * 8 = 8,192
    assert op.cost.read_bytes == 2_560  # 4 * (32*16 + 16*8) = 4 * (512 + 128) = 2,560
    assert op.cost.write_bytes == 1_024  # 4 * 32 * 8 = 1,024
    estimate = estimate_operations([op])
    assert estimate.bytes == 3_584  # 2,560 + 1,024 = 3,584
    assert Fraction(estimate.flops, estimate.bytes) == Fraction(16, 7)  # 8,192 / 3,584 = 16/7
    assert estimate.arithmetic_intensity == 16 / 7  # both sides are the correctly rounded 16/7


def test_dot_general_rhs_transposed():
    # x @ W.T with W (N=8, K=16): contract lhs dim 1 with rhs dim 1, no batch dims.
    op = Operation(
        "xwt", "matmul", ((32, 16), (8, 16)), (32, 8), "float32", attrs={"dimension_numbers": (((1,), (1,)), ((), ()))}
    )
    assert op.cost.flops_by_dtype == {"float32": 8_192}  # 2 * 32 * 8 * 16 = 8,192
    assert op.cost.read_bytes == 2_560  # 4 * (32*16 + 8*16) = 4 * 640 = 2,560
    assert op.cost.write_bytes == 1_024  # 4 * 32 * 8 = 1,024


EINSUM_DN = {"dimension_numbers": (((3,), (3,)), ((0, 1), (0, 1)))}  # 'bhqd,bhkd->bhqk'


def test_dot_general_attention_scores_einsum():
    op = Operation("scores", "matmul", ((2, 4, 128, 64), (2, 4, 256, 64)), (2, 4, 128, 256), "float16", attrs=EINSUM_DN)
    assert op.cost.flops_by_dtype == {"float16": 33_554_432}  # 2 * (2*4) * 128 * 256 * 64 = 33,554,432
    assert op.cost.read_bytes == 393_216  # 2 * (2*4*128*64 + 2*4*256*64) = 2 * (65,536 + 131,072) = 393,216
    assert op.cost.write_bytes == 524_288  # 2 * 2*4*128*256 = 524,288


def test_dot_general_batch_and_contracting_dims_not_leading():
    # lhs (K=16, B=3, M=5), rhs (B=3, N=7, K=16): batch lhs 1 / rhs 0, contract lhs 0 / rhs 2.
    dn = {"dimension_numbers": (((0,), (2,)), ((1,), (0,)))}
    op = Operation("odd", "matmul", ((16, 3, 5), (3, 7, 16)), (3, 5, 7), "float32", attrs=dn)
    assert op.cost.flops_by_dtype == {"float32": 3_360}  # 2 * 3 * 5 * 7 * 16 = 3,360
    # dot_general's output is batch dims, then lhs free dims, then rhs free dims: (B, M, N), not (M, B, N).
    with pytest.raises(ShapeError, match=r"output=\(5, 3, 7\).*expected \(3, 5, 7\)"):
        Operation("odd", "matmul", ((16, 3, 5), (3, 7, 16)), (5, 3, 7), "float32", attrs=dn)


def test_dot_general_rejects_a_dimension_named_twice():
    # Contracting lhs dim 0 twice would count K² instead of K.
    dn = {"dimension_numbers": (((0, 0), (0, 1)), ((), ()))}
    with pytest.raises(ShapeError, match="dimension_numbers are inconsistent"):
        Operation("twice", "matmul", ((4, 4), (4, 4)), (4,), attrs=dn)


def test_numpy_matmul_broadcasts_batch_dims():
    op = Operation("bmm", "matmul", ((2, 1, 5, 6), (3, 6, 4)), (2, 3, 5, 4), "float32")
    assert op.cost.flops_by_dtype == {"float32": 1_440}  # batch (2,1)×(3,) → (2,3): 2 * 2*3 * 5 * 4 * 6 = 1,440
    assert op.cost.read_bytes == 528  # 4 * (2*1*5*6 + 3*6*4) = 4 * (60 + 72) = 528 (each input read once, not expanded)
    assert op.cost.write_bytes == 480  # 4 * 2*3*5*4 = 480


@pytest.mark.parametrize(
    ("lhs", "rhs", "out", "flops"),
    [
        ((6,), (6,), (), 12),  # dot product: 2 * 1 output * 6 = 12
        ((6,), (6, 4), (4,), 48),  # vector @ matrix: 2 * 4 * 6 = 48
        ((3, 5, 6), (6,), (3, 5), 180),  # batched matrix @ vector: 2 * 3*5 * 6 = 180
        ((6,), (2, 6, 4), (2, 4), 96),  # vector @ batched matrix: 2 * 2*4 * 6 = 96
    ],
)
def test_numpy_matmul_one_dimensional_operands(lhs, rhs, out, flops):
    op = Operation("vec", "matmul", (lhs, rhs), out, "float32")
    assert op.cost.flops_by_dtype == {"float32": flops}


def test_numpy_matmul_rejects_the_matrix_shape_for_a_vector_product():
    # (6,) @ (6,4) drops the prepended 1: the output is (4,), not (1, 4).
    with pytest.raises(ShapeError, match=r"output=\(1, 4\).*expected \(4,\)"):
        Operation("vec", "matmul", ((6,), (6, 4)), (1, 4))


# --- attention ------------------------------------------------------------------------------


def _attention(q_len, k_len, *, causal, skips, dtype="bfloat16"):
    # B=2, Hq=8 query heads sharing Hkv=2 key/value heads, D=16, Dv=16.
    return Operation(
        "attn",
        "attention",
        ((2, 8, q_len, 16), (2, 2, k_len, 16), (2, 2, k_len, 16)),
        (2, 8, q_len, 16),
        dtype,
        attrs={"causal": causal, "skips_masked": skips},
    )


def test_causal_pairs_matches_the_sum_it_names():
    for q_len, k_len in ((6, 10), (10, 6), (7, 7), (1, 5), (5, 1), (0, 3)):
        assert causal_pairs(q_len, k_len) == sum(min(i + 1, k_len) for i in range(q_len))
    assert causal_pairs(6, 10) == 21  # 1+2+3+4+5+6 = 6*7/2 = 21
    assert causal_pairs(10, 6) == 45  # 1+2+...+6 = 21, then 4 more rows of 6 = 24; 21 + 24 = 45


def test_attention_causal_kernel_that_skips_masked_blocks_gqa_short_queries():
    skip = _attention(6, 10, causal=True, skips=True)
    dense = _attention(6, 10, causal=True, skips=False)
    # per pair: q·k (2·D) + p·v (2·Dv) = 2 * (16 + 16) = 64 matmul FLOPs, + 1 scale multiply, + softmax's
    # 5 per key (5L-2 per row of L keys: max L-1, subtract L, exp L, sum L-1, divide L) = 70, less 2 per
    # query row (6 rows, each executing >= 1 key); B*Hq = 2*8 = 16 query heads
    assert skip.cost.flops_by_dtype == {"bfloat16": 23_328}  # 16 * (21 pairs * 70 - 2*6) = 16 * 1,458 = 23,328
    assert dense.cost.flops_by_dtype == {"bfloat16": 67_008}  # 16 * (60 pairs * 70 - 2*6) = 16 * 4,188 = 67,008
    assert skip.cost.dense_flops == dense.cost.dense_flops == 61_440  # dense-equivalent is the same in both
    assert skip.cost.transcendentals == 336  # one exp per executed pair: 16 * 21 = 336
    assert dense.cost.transcendentals == 960  # 16 * 60 = 960
    for op in (skip, dense):  # fused kernel: q, k, v read once, output written once; scores never stored
        assert op.cost.read_bytes == 5_632  # 2 bytes * (2*8*6*16 + 2 * 2*2*10*16) = 2 * (1,536 + 1,280) = 5,632
        assert op.cost.write_bytes == 3_072  # 2 * 2*8*6*16 = 3,072


def test_attention_causal_kernel_with_more_queries_than_keys():
    skip = _attention(10, 6, causal=True, skips=True)
    dense = _attention(10, 6, causal=True, skips=False)
    # 70 per pair (64 matmul + 1 scale + 5 softmax), less 2 per query row (all 10 see key 0)
    assert skip.cost.flops_by_dtype == {"bfloat16": 50_080}  # 16 * (45 pairs * 70 - 2*10) = 16 * 3,130 = 50,080
    assert dense.cost.flops_by_dtype == {"bfloat16": 66_880}  # 16 * (60 * 70 - 2*10) = 16 * 4,180 = 66,880
    assert skip.cost.dense_flops == dense.cost.dense_flops == 61_440


def test_attention_without_causal_ignores_skips_masked():
    op = _attention(6, 10, causal=False, skips=True)
    assert op.cost.flops == 67_008  # nothing is masked, so every one of the 60 pairs runs: 16 * (60 * 70 - 2*6)
    assert op.cost.dense_flops == 61_440  # FlopCounterMode's matmuls only: 16 * 60 * 64


def test_attention_value_head_dim_differs_and_estimate_carries_dense_flops():
    op = Operation(
        "attn",
        "attention",
        ((1, 4, 8, 32), (1, 4, 8, 32), (1, 4, 8, 16)),
        (1, 4, 8, 16),
        "float16",
        attrs={"causal": True, "skips_masked": True},
    )
    # pairs = 8*9/2 = 36; per pair 2 * (32 + 16) = 96 matmul + 1 scale + 5 softmax = 102; 8 rows; heads 1*4 = 4
    assert op.cost.flops == 14_624  # 4 * (36 * 102 - 2*8) = 4 * 3,656 = 14,624
    assert op.cost.dense_flops == 24_576  # matmuls only over all pairs: 4 * 64 * 96 = 24,576
    estimate = estimate_operations([op])
    assert (estimate.flops, estimate.dense_flops) == (14_624, 24_576)


# --- cross-checks against PyTorch's FlopCounterMode -------------------------------------------


def _torch_flops(fn):
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def test_linear_and_matmul_flops_match_flop_counter_mode():
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    x, weight = torch.randn(32, 768), torch.randn(1000, 768)
    seed = Operation("classifier", "linear", ((32, 768), (768, 1000)), (32, 1000), 2)
    assert _torch_flops(lambda: functional.linear(x, weight)) == seed.cost.flops == 49_152_000
    a, b = torch.randn(2, 1, 5, 6), torch.randn(3, 6, 4)
    bmm = Operation("bmm", "matmul", ((2, 1, 5, 6), (3, 6, 4)), (2, 3, 5, 4))
    assert _torch_flops(lambda: torch.matmul(a, b)) == bmm.cost.flops == 1_440
    q, k = torch.randn(2, 4, 128, 64), torch.randn(2, 4, 256, 64)
    scores = Operation("scores", "matmul", ((2, 4, 128, 64), (2, 4, 256, 64)), (2, 4, 128, 256), attrs=EINSUM_DN)
    assert _torch_flops(lambda: torch.einsum("bhqd,bhkd->bhqk", q, k)) == scores.cost.flops == 33_554_432


@pytest.mark.parametrize(("q_len", "k_len"), [(6, 10), (10, 6)])
def test_attention_dense_flops_match_flop_counter_mode(q_len, k_len):
    torch = pytest.importorskip("torch")
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import sdpa_flop_count

    q = torch.randn(2, 8, q_len, 16)
    k, v = torch.randn(2, 2, k_len, 16), torch.randn(2, 2, k_len, 16)
    ours = _attention(q_len, k_len, causal=True, skips=True).cost.dense_flops
    # On CPU the fused flash kernel (_scaled_dot_product_flash_attention_for_cpu) has no registered
    # formula, so FlopCounterMode reports 0 for it. Force the math path, which FlopCounterMode counts
    # as its two bmm calls (it computes the full product and then masks), and also compare with the
    # sdpa formula FlopCounterMode registers for the fused GPU kernels.
    with sdpa_kernel(SDPBackend.MATH):
        counted = _torch_flops(
            lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        )
    assert counted == ours == 61_440  # 2*16*60*16 (q·kᵀ) + 2*16*60*16 (p·v) = 30,720 + 30,720
    assert sdpa_flop_count(tuple(q.shape), tuple(k.shape), tuple(v.shape)) == ours


def test_bottom_right_causal_alignment():
    # bottom_right: query i sees keys 0..i+(Sk-Sq); brute force over the mask it names
    for q_len, k_len in ((6, 10), (10, 6), (1, 8), (8, 8), (0, 4)):
        expected = sum(max(0, min(k_len, i + 1 + k_len - q_len)) for i in range(q_len))
        assert causal_pairs(q_len, k_len, "bottom_right") == expected
    assert causal_pairs(1, 8, "bottom_right") == 8  # one decoding query sees the whole cache
    assert causal_pairs(6, 10, "bottom_right") == 45  # 5+6+...+10 = 55 - 10 = 45
    assert causal_pairs(8, 8, "bottom_right") == causal_pairs(8, 8)  # same when Sq == Sk
    op = Operation(
        "decode",
        "attention",
        ((1, 8, 1, 64), (1, 2, 8, 64), (1, 2, 8, 64)),
        (1, 8, 1, 64),
        attrs={"causal": True, "skips_masked": True, "causal_alignment": "bottom_right"},
    )
    # 8 heads × (8 pairs × (256 matmul + 1 scale + 5 softmax) − 2 for its one query row) = 8 × 2,094
    assert op.cost.flops == 16_752
    assert op.cost.dense_flops == 1 * 8 * 8 * 2 * (64 + 64)  # 8 heads × 8 pairs × 256 = 16,384
    with pytest.raises(RecordError, match=r"attrs\['causal_alignment'\]='diagonal'"):
        Operation("a", "attention", ((1, 1, 2, 4),) * 3, (1, 1, 2, 4), attrs={"causal_alignment": "diagonal"})
