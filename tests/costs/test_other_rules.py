"""sort, rng and custom records: never silently zero.

sort: ⌈L·log2 L⌉ comparisons per row; ⌈L·log2 L⌉ = c exactly when 2^(c-1) < L^L ≤ 2^c, which the
tests check in integers. rng: random bits = elements × bits per element, rounded up to whole
generator blocks; threefry2x32 does 115 integer ops per 64-bit block, philox4x32-10 100 per 128,
philox2x32-10 50 per 64, threefry4x32 225 per 128, mt19937 18 per 32 (a state word's update 8 +
tempering 10); shaping the bits (flops_per_element) is charged to the compute dtype. top-k (sort with
attrs["k"]): L-1 comparisons per row for k = 1, else ⌈L·log2 k⌉ (a heap of size k).
"""

from __future__ import annotations

import pytest

from neural_cost import Operation, estimate_operations
from neural_cost.core.errors import RecordError, ShapeError
from neural_cost.costs import sort_comparisons
from neural_cost.costs.other import top_k_comparisons


@pytest.mark.parametrize(
    ("length", "comparisons"),
    [
        (1_024, 10_240),  # power of two: 1,024 * log2 1,024 = 1,024 * 10 = 10,240 exactly
        (1_000, 9_966),  # 1,000 * 9.9657... = 9,965.78..., rounded up
        (3, 5),  # 3 * 1.58496... = 4.75..., rounded up
        (2, 2),  # 2 * 1 = 2
        (1, 0),  # nothing to compare
    ],
)
def test_sort_comparisons_is_the_ceiling_of_l_log2_l(length, comparisons):
    assert sort_comparisons(length) == comparisons
    if length >= 2:
        assert 2 ** (comparisons - 1) < length**length <= 2**comparisons


def test_sort_rows_power_of_two_and_not():
    pow2 = Operation("sort", "sort", ((4, 1_024),), (4, 1_024), "float32")
    assert pow2.cost.flops_by_dtype == {"float32": 40_960}  # 4 rows * 10,240 = 40,960
    other = Operation("sort", "sort", ((4, 1_000),), (4, 1_000), "float32")
    assert other.cost.flops_by_dtype == {"float32": 39_864}  # 4 rows * 9,966 = 39,864
    columns = Operation("sort", "sort", ((1_000, 4),), (1_000, 4), "float32", attrs={"axis": 0})
    assert columns.cost.flops == 39_864  # 4 columns of 1,000 keys: same count
    assert (pow2.cost.read_bytes, pow2.cost.write_bytes) == (16_384, 16_384)  # 4 * 4,096 each way


def test_sort_with_values_moves_them_but_compares_only_keys():
    op = Operation(
        "argsort",
        "sort",
        ((4, 1_024), (4, 1_024)),
        (4, 1_024),
        "float32",
        input_dtypes=("float32", "int32"),
        extra_outputs=((4, 1_024),),
        extra_output_dtypes=("int32",),
    )
    assert op.cost.flops_by_dtype == {"float32": 40_960}  # comparisons of keys only
    assert op.cost.read_bytes == 32_768  # 4,096 keys * 4 + 4,096 values * 4 = 32,768
    assert op.cost.write_bytes == 32_768  # sorted keys 16,384 + permuted values 16,384


# --- top-k: the sort rule with attrs["k"] -----------------------------------------------------
def test_top_k_comparisons_closed_forms():
    assert top_k_comparisons(1_024, 1) == 1_023  # a running max: L - 1
    assert top_k_comparisons(1_024, 8) == 3_072  # 1,024 * log2 8 = 1,024 * 3 = 3,072 exactly
    assert top_k_comparisons(1_000, 5) == 2_322  # 1,000 * 2.3219... = 2,321.9..., rounded up
    assert 2**2_321 < 5**1_000 <= 2**2_322  # the same ceiling in integers
    assert top_k_comparisons(1_024, 1_024) == sort_comparisons(1_024) == 10_240  # k = L is a full sort
    assert top_k_comparisons(1_024, 0) == 0  # nothing selected
    assert top_k_comparisons(1, 1) == 0  # nothing to compare


def test_top_k_record_values_and_indices():
    op = Operation(
        "top_k",
        "sort",
        ((4, 1_024),),
        (4, 8),
        "float32",
        attrs={"k": 8},
        extra_outputs=((4, 8),),
        extra_output_dtypes=("int32",),
    )
    assert op.cost.flops_by_dtype == {"float32": 12_288}  # 4 rows * 3,072 = 12,288
    assert op.cost.read_bytes == 16_384  # the keys once: 4,096 * 4 bytes
    assert op.cost.write_bytes == 256  # 32 values * 4 + 32 int32 indices * 4 = 256
    argmax_like = Operation("top_1", "sort", ((4, 1_024),), (4, 1), "float32", attrs={"k": 1})
    assert argmax_like.cost.flops == 4_092  # 4 rows * 1,023 = 4,092
    columns = Operation("top_k", "sort", ((1_000, 4),), (5, 4), "float32", attrs={"k": 5, "axis": 0})
    assert columns.cost.flops == 9_288  # 4 columns * 2,322 = 9,288


def test_top_k_bad_k_or_output():
    with pytest.raises(ShapeError, match=r"attrs\['k'\]=9 exceeds the 8 keys along axis 1"):
        Operation("top_k", "sort", ((2, 8),), (2, 9), attrs={"k": 9})
    with pytest.raises(ShapeError, match=r"output=\(2, 8\).*expected \(2, 3\)"):
        Operation("top_k", "sort", ((2, 8),), (2, 8), attrs={"k": 3})
    with pytest.raises(RecordError, match=r"attrs\['k'\]=-1 must be an integer >= 0"):
        Operation("top_k", "sort", ((2, 8),), (2, 1), attrs={"k": -1})


def test_philox2x32_and_threefry4x32_blocks():
    philox2 = Operation("bits", "rng", (), (1_000,), "uint32", attrs={"generator": "philox2x32-10"})
    assert philox2.cost.flops_by_dtype == {"uint32": 25_000}  # 32,000 bits / 64 = 500 blocks * 50 = 25,000
    fry4 = Operation("bits", "rng", (), (1_000,), "uint32", attrs={"generator": "threefry4x32"})
    assert fry4.cost.flops_by_dtype == {"uint32": 56_250}  # 32,000 bits / 128 = 250 blocks * 225 = 56,250


def test_rng_threefry_counts_whole_blocks():
    op = Operation(
        "bits", "rng", ((2,),), (1_000,), "float32", attrs={"generator": "threefry2x32"}, input_dtypes=("uint32",)
    )
    # 1,000 * 32 bits = 32,000 bits = 500 blocks of 64; 500 * 115 = 57,500 integer ops
    assert op.cost.flops_by_dtype == {"uint32": 57_500}
    assert op.cost.read_bytes == 8  # the key: 2 * 4 bytes
    assert op.cost.write_bytes == 4_000  # 1,000 * 4 bytes
    odd = Operation("bits", "rng", (), (3,), "float32", attrs={"generator": "threefry2x32"})
    assert odd.cost.flops == 230  # 3 * 32 = 96 bits → 2 blocks of 64 (rounded up) * 115 = 230


def test_rng_default_philox_says_so():
    op = Operation("dropout_mask", "rng", (), (1_000,), "float32")
    assert op.cost.flops_by_dtype == {"uint32": 25_000}  # 32,000 bits / 128 = 250 blocks * 100 = 25,000
    assert op.cost.notes == ("generator not named; counted as philox4x32-10",)
    assert estimate_operations([op]).notes == ("dropout_mask: generator not named; counted as philox4x32-10",)
    wide = Operation("bits", "rng", (), (10,), "uint32", attrs={"generator": "philox4x32-10", "bits_per_element": 64})
    assert wide.cost.flops == 500  # 10 * 64 = 640 bits = 5 blocks * 100 = 500
    assert wide.cost.notes == ()


def test_rng_mt19937_one_state_word_per_32_bits():
    op = Operation("randn", "rng", (), (1_000,), "float32", attrs={"generator": "mt19937"})
    # 1,000 * 32 bits = 1,000 outputs of 32 bits; each: twist of one state word (and, and, or, >>1, &1,
    # select, xor, xor) = 8 + tempering (2 + 3 + 3 + 2) = 10 → 18 integer ops; 1,000 * 18 = 18,000
    assert op.cost.flops_by_dtype == {"uint32": 18_000}
    wide = Operation(
        "bernoulli_", "rng", (), (1_000,), "float32", attrs={"generator": "mt19937", "bits_per_element": 64}
    )
    assert wide.cost.flops == 36_000  # a double per element: 2 words * 1,000 * 18 = 36,000
    assert op.cost.notes == ()


def test_rng_shaping_flops_go_to_the_compute_dtype():
    attrs = {"generator": "mt19937", "flops_per_element": 10, "transcendentals_per_element": 2}
    normal = Operation("randn", "rng", (), (1_000,), "float32", attrs=attrs)
    # generator 18,000 uint32 ops; Box-Muller 10 FLOPs and 2 transcendentals per element
    assert normal.cost.flops_by_dtype == {"uint32": 18_000, "float32": 10_000}
    assert normal.cost.transcendentals == 2_000
    double = Operation("bernoulli_", "rng", (), (10,), "float32", attrs={**attrs, "compute_dtype": "float64"})
    assert double.cost.flops_by_dtype == {"uint32": 180, "float64": 100}  # shaped in double: 10 * 10
    dropout = Operation(
        "native_dropout",
        "rng",
        ((10,),),
        (10,),
        "float16",
        attrs={"generator": "philox4x32-10", "bits_per_element": 32, "flops_per_element": 6},
        extra_outputs=((10,),),
        extra_output_dtypes=("bool",),
    )
    # 320 bits = 3 philox blocks (rounded up) * 100 = 300; 6 * 10 = 60 float16 FLOPs
    assert dropout.cost.flops_by_dtype == {"uint32": 300, "float16": 60}
    assert (dropout.cost.read_bytes, dropout.cost.write_bytes) == (20, 30)  # x read; output 20 + mask 10
    with pytest.raises(RecordError, match=r"attrs\['flops_per_element'\]=-1 must be an integer >= 0"):
        Operation("r", "rng", (), (4,), attrs={"generator": "mt19937", "flops_per_element": -1})


def test_custom_int_flops_charge_the_compute_dtype():
    op = Operation("kernel", "custom", ((100,),), (100,), "float16", attrs={"flops": 1_000})
    assert op.cost.flops_by_dtype == {"float16": 1_000}
    assert (op.cost.read_bytes, op.cost.write_bytes) == (200, 200)  # default traffic: 2 * 100 each way


def test_custom_dtype_mapping_and_explicit_traffic():
    op = Operation(
        "fused",
        "custom",
        ((100,),),
        (100,),
        "float32",
        attrs={
            "flops": {"bf16": 500, "float32": 20, "int8": 0},
            "read_bytes": 64,
            "write_bytes": 32,
            "dense_flops": 900,
            "transcendentals": 7,
        },
    )
    assert op.cost.flops_by_dtype == {"bfloat16": 500, "float32": 20}  # names canonicalised; zeros dropped
    assert (op.cost.read_bytes, op.cost.write_bytes) == (64, 32)
    assert (op.cost.dense_flops, op.cost.transcendentals) == (900, 7)


# --- embedding_bag, dequantize, pad_backward -------------------------------------------------

BAG = ((24, 8), (24,), (4,))  # the 24 rows looked up, their indices, 4 bag offsets
INDEX = ("float32", "int64", "int64")


@pytest.mark.parametrize(("mode", "flops"), [("sum", 160), ("max", 160), ("mean", 192)])
def test_embedding_bag_combines_each_bag(mode, flops):
    # 24 rows into 4 bags: (24 - 4) * 8 = 160 adds or comparisons; a mean + 4 * 8 divides = 192
    op = Operation("eb", "embedding_bag", BAG, (4, 8), input_dtypes=INDEX, attrs={"mode": mode})
    assert op.cost.flops == flops
    assert op.cost.read_bytes == 992  # rows 4 * 192 = 768 + indices 8 * 24 = 192 + offsets 8 * 4 = 32
    assert op.cost.write_bytes == 128  # 4 * 32


def test_embedding_bag_per_sample_weights_and_bad_shapes():
    weighted = Operation("eb", "embedding_bag", (*BAG, (24,)), (4, 8), input_dtypes=(*INDEX, "float32"))
    assert weighted.cost.flops == 352  # 160 + one multiply per row element 24 * 8 = 192
    with pytest.raises(ShapeError, match="one row per index"):
        Operation("eb", "embedding_bag", ((23, 8), (24,), (4,)), (4, 8))
    with pytest.raises(ShapeError, match=r"must be \(bags, 8\)"):
        Operation("eb", "embedding_bag", BAG, (4, 7))
    with pytest.raises(ShapeError, match="one weight per row"):
        Operation("eb", "embedding_bag", (*BAG, (23,)), (4, 8))


def test_dequantize_one_op_per_scale_or_bias_operand():
    scales = ((4, 8), (4, 1), (1, 8))  # the product, then row- and column-wise scales
    assert Operation("dq", "dequantize", scales, (4, 8)).cost.flops == 64  # 2 multiplies * 32
    op = Operation("dq", "dequantize", (*scales, (8,)), (4, 8))
    assert op.cost.flops == 96  # + the bias add: 3 * 32
    assert op.cost.read_bytes == 4 * (32 + 4 + 8 + 8)  # 208: the scales read once, whatever their blocking
    with pytest.raises(ShapeError, match="keeps the product's shape"):
        Operation("dq", "dequantize", scales, (8, 4))


def test_pad_backward_adds_each_padded_gradient_back():
    op = Operation("pb", "pad_backward", ((1, 2, 9),), (1, 2, 5))
    assert op.cost.flops == 8  # 18 gradient elements - 10 input elements
    assert (op.cost.read_bytes, op.cost.write_bytes) == (72, 40)  # 4 * 18; 4 * 10
    assert Operation("pb", "pad_backward", ((1, 2, 3),), (1, 2, 5)).cost.flops == 0  # a crop adds nothing
    with pytest.raises(ShapeError, match="must have the same rank"):
        Operation("pb", "pad_backward", ((2, 9),), (1, 2, 5))
