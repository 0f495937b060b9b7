"""One hand-checked example for each kind that replaced an adapter's ``custom`` formula
(issue 11): the entries ``test_rules.EXAMPLES`` needs for these kinds. Float32 = 4 bytes."""

from __future__ import annotations

import pytest

from neural_cost import Operation

F32 = "float32"
_Q, _KV = (1, 2, 4, 8), (1, 1, 4, 8)
_INPUT_ONLY = {"grad_weight": False, "grad_bias": False}

# kind → (record, FLOPs, read bytes, write bytes), every figure derived by hand.
NEW_KIND_EXAMPLES = {
    "norm_backward": (
        Operation("nb", "norm_backward", ((2, 4), (2, 4)), (2, 4), attrs=_INPUT_ONLY),
        72,  # x̂ 2E + grad_input 7E = 9 * 8 = 72
        64,  # 4 * (8 + 8) = 64
        32,  # 4 * 8 = 32
    ),
    "safe_softmax": (
        Operation("ss", "safe_softmax", ((2, 3),), (2, 3)),
        42,  # 2 rows * (8*3 - 3) = 42
        24,  # 4 * 6 = 24
        24,  # 4 * 6 = 24
    ),
    "softmax_backward": (
        Operation("sb", "softmax_backward", ((2, 3), (2, 3)), (2, 3)),
        22,  # 2 rows * (4*3 - 1) = 22
        48,  # 4 * (6 + 6) = 48
        24,  # 4 * 6 = 24
    ),
    "adaptive_pooling": (
        Operation("ap", "adaptive_pooling", ((1, 1, 5, 5),), (1, 1, 2, 2)),
        36,  # windows [0,3) [2,5) per dim: (3 + 3)² = 36 elements, adds and divides
        100,  # 4 * 25 = 100
        16,  # 4 * 4 = 16
    ),
    "pooling_gradient": (
        Operation("pg", "pooling_gradient", ((1, 1, 2, 2),), (1, 1, 4, 4), attrs={"mode": "avg", "kernel": 2}),
        20,  # 4 gradients * (4 adds + 1 divide) = 20
        16,  # 4 * 4 = 16
        64,  # 4 * 16 = 64
    ),
    "attention_backward": (
        Operation("ab", "attention_backward", (_Q, _KV, _KV), _Q),
        2_560,  # 2 * (1*2 heads) * (4*4 pairs) * (3*8 + 2*8) = 2 * 2 * 16 * 40 = 2,560
        512,  # 4 * (64 + 32 + 32) = 512
        256,  # 4 * 64 = 256
    ),
    "qkv_bias_rescale": (
        Operation("qb", "qkv_bias_rescale", ((2, 6), (6,)), (3, 2, 2)),
        16,  # 2 rows * 4 * (6 / 3) = 16
        72,  # 4 * (12 + 6) = 72
        48,  # 4 * 12 = 48
    ),
    "rnn_gate_backward": (
        Operation("rg", "rnn_gate_backward", ((2, 6),), (2, 6), attrs={"mode": "gru"}),
        68,  # 2 rows * 2 units * 17 = 68
        48,  # 4 * 12 = 48
        48,  # 4 * 12 = 48
    ),
    "embedding_bag": (
        Operation("eb", "embedding_bag", ((4, 2), (4,), (2,)), (2, 2)),
        4,  # (4 rows - 2 bags) * 2 features = 4 adds
        56,  # 4 * (8 + 4 + 2) = 56
        16,  # 4 * 4 = 16
    ),
    "dequantize": (
        Operation("dq", "dequantize", ((2, 2), (2, 1), (1, 2)), (2, 2)),
        8,  # 2 scales * 4 outputs = 8
        32,  # 4 * (4 + 2 + 2) = 32
        16,  # 4 * 4 = 16
    ),
    "pad_backward": (
        Operation("pb", "pad_backward", ((1, 6),), (1, 4)),
        2,  # 6 - 4 = 2 adds
        24,  # 4 * 6 = 24
        16,  # 4 * 4 = 16
    ),
    "nll_loss": (
        Operation("nl", "nll_loss", ((3,), (3,)), ()),
        11,  # 3 * 2 + 2 (loss sum) + 2 (weight sum) + 1 divide = 11
        24,  # 4 * (3 + 3) = 24
        4,  # 4 * 1 = 4
    ),
    "nll_loss_backward": (
        Operation("nlb", "nll_loss_backward", ((), (3,), ()), (3, 5)),
        12,  # 3 targets * 4 (test, negate, ·grad, ÷total_weight) = 12
        20,  # 4 * (1 + 3 + 1) = 20
        60,  # 4 * 15 = 60
    ),
    "foreach_reduce": (
        Operation("fr", "foreach_reduce", ((3,), (2,)), (), extra_outputs=((),)),
        3,  # (3 - 1) + (2 - 1) = 3
        20,  # 4 * (3 + 2) = 20
        8,  # 4 * 2 = 8
    ),
    "foreach_elementwise": (
        Operation("fe", "foreach_elementwise", ((3,), (2,)), (3,), extra_outputs=((2,),)),
        5,  # 1 per element: 3 + 2 = 5
        20,  # 4 * 5 = 20
        20,  # 4 * 5 = 20
    ),
}


# The resampling, distance, Fourier, linear-algebra and callback kinds (issue 12 item 6); their
# closed forms and shape checks are in test_resample_linalg_rules.
NEW_KIND_EXAMPLES.update(
    {
        "interpolate": (
            Operation("up", "interpolate", ((1, 2, 4, 4),), (1, 2, 8, 8), attrs={"mode": "bilinear"}),
            1_152,  # 2·64 outputs × 9 (3 lerps × 3) = 1,152
            128,  # 4 * 32 = 128
            512,  # 4 * 128 = 512
        ),
        "interpolate_backward": (
            Operation("upb", "interpolate_backward", ((1, 2, 8, 8),), (1, 2, 4, 4), attrs={"mode": "bilinear"}),
            1_024,  # 128 gradients × 2·4 taps = 1,024
            512,  # 4 * 128 = 512
            128,  # 4 * 32 = 128
        ),
        "grid_sample": (
            Operation("gs", "grid_sample", ((1, 2, 4, 4), (1, 3, 3, 2)), (1, 2, 3, 3)),
            270,  # 9 points × 16 + 9 × 2 channels × 7 = 144 + 126 = 270
            200,  # 4 * (32 + 18) = 200
            72,  # 4 * 18 = 72
        ),
        "cdist": (
            Operation("cd", "cdist", ((3, 4), (5, 4)), (3, 5)),
            180,  # 15 pairs × 3·4 = 180
            128,  # 4 * (12 + 20) = 128
            60,  # 4 * 15 = 60
        ),
        "fft": (
            Operation(
                "ff", "fft", ((4, 8),), (4, 8), "complex64", input_dtypes=("complex64",), attrs={"lengths": (8,)}
            ),
            480,  # 4 transforms × 5·8·3 = 480, charged to float32
            256,  # 8 * 32 = 256
            256,  # 8 * 32 = 256
        ),
        "decomposition": (
            Operation("lu", "decomposition", ((6, 6),), (6, 6), attrs={"routine": "lu"}),
            144,  # 2·6³/3 = 144
            144,  # 4 * 36 = 144
            144,  # 4 * 36 = 144
        ),
        "grouped_matmul": (
            # 6 tokens (M) of 4 features (K) through 3 experts' (4 → 5) weights, the experts' sizes (3,) as int32
            Operation("moe", "grouped_matmul", ((6, 4), (3, 4, 5), (3,)), (6, 5), input_dtypes=(F32, F32, "int32")),
            240,  # 2 · M · K · N = 2 · 6 · 4 · 5 = 240: each token through one expert
            348,  # 4 · (24 + 60) + 4 · 3 = 336 + 12 = 348: every expert's weights, the sizes
            120,  # 4 · 30 = 120
        ),
        "histogram": (
            # 30 values into 4 bins over their own range (histc's default min = max = 0), counts as float32
            Operation("h", "histogram", ((10, 3),), (4,), attrs={"range_from_data": True}),
            238,  # 6 · 30 (range tests, bin index, add) + 2 · 29 (the data's min and max) = 180 + 58 = 238
            240,  # 4 · 30 read twice: once for the range, once to count = 240
            16,  # 4 · 4 = 16
        ),
        "callback": (
            Operation("cb", "callback", ((4, 4),), (4,)),
            0,  # FLOPs unknown: not counted, and noted
            64,  # 4 * 16 = 64
            16,  # 4 * 4 = 16
        ),
    }
)


@pytest.mark.parametrize("kind", sorted(NEW_KIND_EXAMPLES))
def test_one_hand_checked_example_per_new_kind(kind):
    op, flops, read_bytes, write_bytes = NEW_KIND_EXAMPLES[kind]
    assert op.kind == kind
    assert dict(op.cost.flops_by_dtype) == ({F32: flops} if flops else {})
    assert (op.cost.read_bytes, op.cost.write_bytes) == (read_bytes, write_bytes)
