"""Convolution (1-D/2-D/3-D, grouped, strided, dilated, padded, transposed) and pooling.

Convention (ARCHITECTURE.md): conv = 2 · output elements · (C_in/groups) · prod(kernel), padded
taps included, as FlopCounterMode counts; transposed conv = 2 · N · prod(input spatial) · C_in ·
(C_out/groups) · prod(kernel). Output size per spatial dim: (in + pads - dilation·(k-1) - 1) //
stride + 1. The torch tests run FlopCounterMode on real tensors of the same shapes.
"""

from __future__ import annotations

import pytest

from neural_cost import Operation
from neural_cost.core.errors import RecordError, ShapeError

# x (N=2, C_in=8, 17, 20), 4 groups, weight (C_out=12, C_in/groups=2, 3, 5),
# stride (2, 3), dilation (2, 1), padding (1, 2).
# H: (17 + 2 - 2*(3-1) - 1) // 2 + 1 = 14 // 2 + 1 = 8;  W: (20 + 4 - 1*(5-1) - 1) // 3 + 1 = 19 // 3 + 1 = 7
GROUPED = {"groups": 4, "stride": (2, 3), "dilation": (2, 1), "padding": (1, 2)}


def _grouped_conv(output=(2, 12, 8, 7)):
    return Operation("conv", "conv", ((2, 8, 17, 20), (12, 2, 3, 5)), output, "float32", attrs=GROUPED)


def test_grouped_strided_dilated_padded_conv2d():
    op = _grouped_conv()
    # output elements 2*12*8*7 = 1,344; 2 * 1,344 * (8/4 = 2) * (3*5 = 15) = 80,640
    assert op.cost.flops_by_dtype == {"float32": 80_640}
    assert op.cost.read_bytes == 23_200  # 4 * (2*8*17*20 + 12*2*3*5) = 4 * (5,440 + 360) = 23,200
    assert op.cost.write_bytes == 5_376  # 4 * 1,344 = 5,376


def test_conv_rejects_an_output_that_ignores_stride():
    # Without the stride the height would be 14 + 1 = 15; the rule must insist on 8.
    with pytest.raises(ShapeError, match=r"output=\(2, 12, 15, 7\).*expected \(2, 12, 8, 7\)"):
        _grouped_conv(output=(2, 12, 15, 7))


def test_conv1d_same_padding():
    op = Operation("c1", "conv", ((3, 4, 50), (6, 4, 7)), (3, 6, 50), "float32", attrs={"padding": 3})
    # out length (50 + 6 - 6 - 1) // 1 + 1 = 50; 2 * (3*6*50 = 900) * 4 * 7 = 50,400
    assert op.cost.flops_by_dtype == {"float32": 50_400}
    assert op.cost.read_bytes == 3_072  # 4 * (3*4*50 + 6*4*7) = 4 * (600 + 168) = 3,072
    assert op.cost.write_bytes == 3_600  # 4 * 900 = 3,600


def test_conv3d_strided():
    op = Operation(
        "c3", "conv", ((1, 2, 8, 8, 8), (4, 2, 3, 3, 3)), (1, 4, 4, 4, 4), "bfloat16", attrs={"stride": 2, "padding": 1}
    )
    # each dim (8 + 2 - 2 - 1) // 2 + 1 = 4; output elements 4*4*4*4 = 256; 2 * 256 * 2 * 27 = 27,648
    assert op.cost.flops_by_dtype == {"bfloat16": 27_648}
    assert op.cost.read_bytes == 2_480  # 2 bytes * (1*2*8*8*8 + 4*2*3*3*3) = 2 * (1,024 + 216) = 2,480
    assert op.cost.write_bytes == 512  # 2 * 256 = 512


def test_conv_asymmetric_padding_pairs():
    op = Operation(
        "cp", "conv", ((1, 1, 5, 5), (1, 1, 3, 3)), (1, 1, 4, 5), "float32", attrs={"padding": ((0, 1), (1, 1))}
    )
    # H: (5 + 0 + 1 - 3) + 1 = 4; W: (5 + 2 - 3) + 1 = 5; 2 * 20 * 1 * 9 = 360
    assert op.cost.flops == 360


# x (2, C_in=6, 5, 7), 3 groups, weight (C_in=6, C_out/groups=4, 3, 3) → C_out = 12;
# stride 2, padding 1, output_padding 1: H (5-1)*2 - 2 + (3-1) + 1 + 1 = 10; W (7-1)*2 - 2 + 2 + 1 + 1 = 14
TRANSPOSED = {"transposed": True, "groups": 3, "stride": 2, "padding": 1, "output_padding": 1}


def test_transposed_conv2d_counts_input_positions():
    op = Operation("up", "conv", ((2, 6, 5, 7), (6, 4, 3, 3)), (2, 12, 10, 14), "float32", attrs=TRANSPOSED)
    # 2 * N * prod(in spatial) * C_in * (C_out/groups) * prod(kernel) = 2 * 2 * 35 * 6 * 4 * 9 = 30,240
    assert op.cost.flops_by_dtype == {"float32": 30_240}
    assert op.cost.read_bytes == 2_544  # 4 * (2*6*5*7 + 6*4*3*3) = 4 * (420 + 216) = 2,544
    assert op.cost.write_bytes == 13_440  # 4 * 2*12*10*14 = 4 * 3,360 = 13,440


def test_transposed_conv_equals_the_forward_conv_it_is_the_adjoint_of():
    up = Operation("up", "conv", ((2, 6, 5, 7), (6, 4, 3, 3)), (2, 12, 10, 14), attrs=TRANSPOSED)
    # The forward conv (2,12,10,14) → (2,6,5,7) with the same weight read as (C_out=6, C_in/groups=4, 3, 3):
    # H (10 + 2 - 3) // 2 + 1 = 5, W (14 + 2 - 3) // 2 + 1 = 7; 2 * (2*6*5*7 = 420) * 4 * 9 = 30,240
    down = Operation(
        "down", "conv", ((2, 12, 10, 14), (6, 4, 3, 3)), (2, 6, 5, 7), attrs={"groups": 3, "stride": 2, "padding": 1}
    )
    assert up.cost.flops == down.cost.flops == 30_240


def test_transposed_conv1d_dilated():
    op = Operation(
        "up1", "conv", ((1, 4, 10), (4, 2, 3)), (1, 2, 14), "float32", attrs={"transposed": True, "dilation": 2}
    )
    # length (10-1)*1 - 0 + 2*(3-1) + 0 + 1 = 14; 2 * 1 * 10 * 4 * 2 * 3 = 480
    assert op.cost.flops == 480


# --- pooling --------------------------------------------------------------------------------


def test_max_and_avg_pooling_with_padding():
    # (32 + 2 - 3) // 2 + 1 = 16 per dim → 1*3*16*16 = 768 outputs over 3x3 windows
    attrs = {"kernel": (3, 3), "stride": 2, "padding": 1}
    max_pool = Operation("mp", "pooling", ((1, 3, 32, 32),), (1, 3, 16, 16), attrs=attrs)
    avg_pool = Operation("ap", "pooling", ((1, 3, 32, 32),), (1, 3, 16, 16), attrs={**attrs, "mode": "avg"})
    assert max_pool.cost.flops_by_dtype == {"float32": 6_144}  # 768 * (9 - 1) comparisons = 6,144
    assert avg_pool.cost.flops_by_dtype == {"float32": 6_912}  # 768 * (8 adds + 1 divide) = 6,912
    assert max_pool.cost.read_bytes == 12_288  # 4 * 3*32*32 = 12,288
    assert max_pool.cost.write_bytes == 3_072  # 4 * 768 = 3,072


def test_pooling_ceil_mode_adds_a_partial_window():
    floor = Operation("p", "pooling", ((1, 1, 6, 6),), (1, 1, 2, 2), attrs={"kernel": 3, "stride": 2})
    ceil = Operation("p", "pooling", ((1, 1, 6, 6),), (1, 1, 3, 3), attrs={"kernel": 3, "stride": 2, "ceil_mode": True})
    assert floor.cost.flops == 32  # (6 - 3) // 2 + 1 = 2 per dim; 4 outputs * 8 = 32
    assert ceil.cost.flops == 72  # ceil(3 / 2) + 1 = 3 per dim; the last window starts at 4 < 6; 9 * 8 = 72


def test_pooling_ceil_mode_never_starts_a_window_in_the_high_padding():
    # (5 + 2 - 2) / 2 rounded up is 3, + 1 = 4, but window 4 would start at (4-1)*2 = 6 >= 5 + 1,
    # wholly in the high padding, so PyTorch drops it: 3 per dim.
    attrs = {"kernel": 2, "stride": 2, "padding": 1, "ceil_mode": True}
    op = Operation("p", "pooling", ((1, 1, 5, 5),), (1, 1, 3, 3), attrs=attrs)
    assert op.cost.flops == 27  # 3*3 = 9 outputs * (2*2 - 1) comparisons = 27
    with pytest.raises(ShapeError, match=r"expected \(1, 1, 3, 3\)"):
        Operation("p", "pooling", ((1, 1, 5, 5),), (1, 1, 4, 4), attrs=attrs)


def test_pooling_a_window_wider_than_the_input_in_ceil_mode_reads_the_input_only():
    """HF EfficientNet pools its last 4×4 maps with ``AvgPool2d(hidden_dim, ceil_mode=True)`` (2560 by default;
    1280 here): PyTorch gives one output per channel (room 4 - 1280 = -1276, rounded up: ceil(-1276 / 1280) + 1 =
    1; it starts at 0 < 4), which averages the 16 inputs, not a 1280² window. Per output 4·4 = 16 taps (avg:
    16 adds and a divide counted as 16); 2·1280 outputs → 40,960 FLOPs. Without ceil_mode no window fits: no output."""
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 1280, 4, 4)
    out = torch.nn.functional.avg_pool2d(x, 1280, ceil_mode=True)
    assert tuple(out.shape) == (2, 1280, 1, 1)
    attrs = {"kernel": 1280, "mode": "avg", "ceil_mode": True}
    op = Operation("p", "pooling", ((2, 1280, 4, 4),), (2, 1280, 1, 1), attrs=attrs)
    assert op.cost.flops == 40_960
    with pytest.raises(ShapeError, match=r"expected \(2, 1280, 0, 0\)"):
        Operation("p", "pooling", ((2, 1280, 4, 4),), (2, 1280, 1, 1), attrs={"kernel": 1280, "mode": "avg"})


def test_pooling_1d_with_dilation():
    op = Operation("p1", "pooling", ((2, 3, 20),), (2, 3, 8), attrs={"kernel": (3,), "stride": 2, "dilation": 2})
    # (20 - 2*(3-1) - 1) // 2 + 1 = 15 // 2 + 1 = 8; 2*3*8 = 48 outputs * 2 comparisons = 96
    assert op.cost.flops == 96


# --- cross-checks against PyTorch -----------------------------------------------------------


def _torch_flops(fn):
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        result = fn()
    return counter.get_total_flops(), tuple(result.shape)


def test_conv_flops_match_flop_counter_mode():
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    x, w = torch.randn(2, 8, 17, 20), torch.randn(12, 2, 3, 5)
    flops, shape = _torch_flops(
        lambda: functional.conv2d(x, w, stride=(2, 3), padding=(1, 2), dilation=(2, 1), groups=4)
    )
    assert (flops, shape) == (_grouped_conv().cost.flops, (2, 12, 8, 7))
    x1, w1 = torch.randn(3, 4, 50), torch.randn(6, 4, 7)
    flops, shape = _torch_flops(lambda: functional.conv1d(x1, w1, padding=3))
    assert (flops, shape) == (50_400, (3, 6, 50))
    x3, w3 = torch.randn(1, 2, 8, 8, 8), torch.randn(4, 2, 3, 3, 3)
    flops, shape = _torch_flops(lambda: functional.conv3d(x3, w3, stride=2, padding=1))
    assert (flops, shape) == (27_648, (1, 4, 4, 4, 4))


def test_transposed_conv_flops_match_flop_counter_mode():
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    x, w = torch.randn(2, 6, 5, 7), torch.randn(6, 4, 3, 3)
    flops, shape = _torch_flops(
        lambda: functional.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1, groups=3)
    )
    ours = Operation("up", "conv", ((2, 6, 5, 7), (6, 4, 3, 3)), shape, attrs=TRANSPOSED)
    assert shape == (2, 12, 10, 14)
    assert flops == ours.cost.flops == 30_240
    x1, w1 = torch.randn(1, 4, 10), torch.randn(4, 2, 3)
    flops, shape = _torch_flops(lambda: functional.conv_transpose1d(x1, w1, dilation=2))
    assert (flops, shape) == (480, (1, 2, 14))


@pytest.mark.parametrize(
    ("size", "kernel", "stride", "padding", "dilation"),
    [(5, 2, 2, 1, 1), (6, 3, 2, 0, 1), (7, 3, 2, 1, 1), (10, 3, 3, 1, 2), (9, 2, 3, 1, 1), (4, 4, 3, 2, 1)],
)
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_pooling_output_sizes_match_torch(size, kernel, stride, padding, dilation, ceil_mode):
    torch = pytest.importorskip("torch")
    x = torch.randn(1, 1, size, size)
    out = torch.nn.functional.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode=ceil_mode)
    attrs = {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation, "ceil_mode": ceil_mode}
    op = Operation("p", "pooling", ((1, 1, size, size),), tuple(out.shape), attrs=attrs)  # accepted
    assert op.cost.flops == out.numel() * (kernel * kernel - 1)  # outputs * (window - 1) comparisons


# --- XLA's general convolution: lhs_dilation, batch_groups, negative padding ----------------

# The transposed conv above written as XLA writes it (jax.lax.conv_transpose, the input gradient
# of a strided conv): x (2, C_in=6, 5, 7) with one hole between elements (lhs_dilation 2), the
# forward-layout weight (C_out=12, C_in/groups=2, 3, 3), 3 groups, padding low = dilation·(k-1) -
# pad = 1, high = 1 + output_padding = 2.
# H: (5-1)*2 + 1 = 9, + 1 + 2 = 12, - (3-1) - 1 → 9 // 1 + 1 = 10;  W: (7-1)*2 + 1 = 13 + 3 - 3 + 1 = 14
LHS_DILATED = {"lhs_dilation": (2, 2), "groups": 3, "padding": ((1, 2), (1, 2))}


def test_lhs_dilated_conv_counts_only_real_taps():
    op = Operation("up", "conv", ((2, 6, 5, 7), (12, 2, 3, 3)), (2, 12, 10, 14), "float32", attrs=LHS_DILATED)
    # transposed convention: 2 * N * prod(in spatial) * C_in * (C_out/groups) * prod(kernel)
    # = 2 * 2 * 35 * 6 * 4 * 9 = 30,240 (the holes are not work: the dense count would be
    # 2 * (2*12*10*14 = 3,360) * 2 * 9 = 120,960)
    assert op.cost.flops_by_dtype == {"float32": 30_240}
    assert op.cost.read_bytes == 2_544  # 4 * (2*6*5*7 + 12*2*3*3) = 4 * (420 + 216) = 2,544
    assert op.cost.write_bytes == 13_440  # 4 * 3,360
    with pytest.raises(ShapeError, match=r"expected \(2, 12, 10, 14\)"):
        Operation("up", "conv", ((2, 6, 5, 7), (12, 2, 3, 3)), (2, 12, 9, 13), attrs=LHS_DILATED)


def test_lhs_dilated_conv_equals_the_transposed_record():
    xla = Operation("up", "conv", ((2, 6, 5, 7), (12, 2, 3, 3)), (2, 12, 10, 14), attrs=LHS_DILATED)
    torch_style = Operation("up", "conv", ((2, 6, 5, 7), (6, 4, 3, 3)), (2, 12, 10, 14), attrs=TRANSPOSED)
    assert xla.cost.flops == torch_style.cost.flops == 30_240


def test_lhs_dilated_conv_matches_flop_counter_mode_conv_transpose2d():
    torch = pytest.importorskip("torch")
    x, w = torch.randn(2, 6, 5, 7), torch.randn(6, 4, 3, 3)
    flops, shape = _torch_flops(
        lambda: torch.nn.functional.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1, groups=3)
    )
    ours = Operation("up", "conv", ((2, 6, 5, 7), (12, 2, 3, 3)), shape, attrs=LHS_DILATED)
    assert shape == (2, 12, 10, 14)
    assert flops == ours.cost.flops == 30_240
    # 1-D, dilated kernel, no padding: conv_transpose1d(x (1, 4, 10), w (4, 2, 3), stride 3, dilation 2)
    # is, in XLA's terms, lhs_dilation 3 and padding dilation·(k-1) = 4 each side:
    # length (10-1)*3 + 1 + 8 - 4 - 1 + 1 = 32; FLOPs 2 * 1 * 10 * 4 * 2 * 3 = 480
    x1, w1 = torch.randn(1, 4, 10), torch.randn(4, 2, 3)
    flops, shape = _torch_flops(lambda: torch.nn.functional.conv_transpose1d(x1, w1, stride=3, dilation=2))
    ours = Operation(
        "up1", "conv", ((1, 4, 10), (2, 4, 3)), shape, attrs={"lhs_dilation": (3,), "dilation": 2, "padding": ((4, 4),)}
    )
    assert (flops, shape) == (ours.cost.flops, (1, 2, 32)) == (480, (1, 2, 32))


def test_negative_padding_crops_the_input():
    # The weight gradient JAX emits for a VALID stride-2 conv of x (2, 3, 8, 8) with w (4, 3, 3, 3):
    # x read as (N=3, C=2, 8, 8), the output gradient as the weight (4, 2, 3, 3) dilated by 2,
    # padding (0, -1): H = (8 + 0 - 1 - 2*(3-1) - 1) // 1 + 1 = 3.
    op = Operation(
        "dw", "conv", ((3, 2, 8, 8), (4, 2, 3, 3)), (3, 4, 3, 3), attrs={"dilation": 2, "padding": ((0, -1), (0, -1))}
    )
    # 2 * (3*4*3*3 = 108) * 2 * 9 = 3,888 — the forward conv's count: output (2, 4, 3, 3),
    # 2 * 72 * 3 * 9 = 3,888 (a weight gradient does the forward's work)
    forward = Operation("fw", "conv", ((2, 3, 8, 8), (4, 3, 3, 3)), (2, 4, 3, 3), attrs={"stride": 2})
    assert op.cost.flops == forward.cost.flops == 3_888
    with pytest.raises(RecordError, match=r"attrs\['padding'\]=-1 must be an integer >= 0"):
        Operation("dw", "conv", ((3, 2, 8, 8), (4, 2, 3, 3)), (3, 4, 3, 3), attrs={"padding": -1})


def test_batch_groups_split_the_batch():
    # The weight gradient JAX emits for a 3-group conv of x (2, 6, 9, 9) with w (12, 2, 3, 3),
    # stride 2, padding 1: x read as (N=6, C=2, 9, 9), the output gradient as the weight
    # (12, 2, 5, 5) dilated by 2, batch_groups 3 → output (6/3 = 2, 12, 3, 3):
    # H = (9 + 2 - 2*(5-1) - 1) // 1 + 1 = 3
    attrs = {"dilation": 2, "padding": 1, "batch_groups": 3}
    op = Operation("dw", "conv", ((6, 2, 9, 9), (12, 2, 5, 5)), (2, 12, 3, 3), attrs=attrs)
    # 2 * (2*12*3*3 = 216) * C_in 2 * 25 = 21,600; the forward: output (2, 12, 5, 5),
    # 2 * 600 * (6/3 = 2) * 9 = 21,600
    forward = Operation(
        "fw", "conv", ((2, 6, 9, 9), (12, 2, 3, 3)), (2, 12, 5, 5), attrs={"groups": 3, "stride": 2, "padding": 1}
    )
    assert op.cost.flops == forward.cost.flops == 21_600
    assert op.cost.read_bytes == 6_288  # 4 * (6*2*9*9 + 12*2*5*5) = 4 * (972 + 600) = 6,288
    assert op.cost.write_bytes == 864  # 4 * 216
    with pytest.raises(ShapeError, match=r"batch 6 and output channels 12 must both be divisible by batch_groups=4"):
        Operation("dw", "conv", ((6, 2, 9, 9), (12, 2, 5, 5)), (2, 12, 3, 3), attrs={**attrs, "batch_groups": 4})
    with pytest.raises(ShapeError, match=r"expected \(2, 12, 3, 3\)"):
        Operation("dw", "conv", ((6, 2, 9, 9), (12, 2, 5, 5)), (6, 12, 3, 3), attrs=attrs)


def test_transposed_and_lhs_dilation_together_are_refused():
    with pytest.raises(RecordError, match=r"describe a transposed conv one way"):
        Operation("up", "conv", ((2, 6, 5, 7), (6, 4, 3, 3)), (2, 12, 10, 14), attrs={**TRANSPOSED, "lhs_dilation": 2})


# --- pooling modes, XLA's window attributes, and the max-pool gradient ----------------------


POOLING = ("max", "min", "sum", "avg")


def test_window_sum_min_and_avg():
    # (8 - 2) // 2 + 1 = 4 per dim → 2*3*4*4 = 96 outputs over 2x2 windows
    shapes = (((2, 3, 8, 8),), (2, 3, 4, 4))
    by_mode = {m: Operation("p", "pooling", *shapes, attrs={"kernel": 2, "mode": m}).cost.flops for m in POOLING}
    assert by_mode == {
        "max": 288,  # 96 * (4 - 1) comparisons = 288
        "min": 288,  # the same count
        "sum": 288,  # 96 * (4 - 1) adds = 288
        "avg": 384,  # 96 * (3 adds + 1 divide) = 384: a window sum and an elementwise divide add up to it
    }


def test_pooling_with_lhs_dilation_and_negative_padding():
    # XLA's base_dilation 2: 16 → (16-1)*2 + 1 = 31; (31 - 3) // 2 + 1 = 15 per dim, 2*3*15*15 = 1,350 outputs
    op = Operation(
        "p",
        "pooling",
        ((2, 3, 16, 16),),
        (2, 3, 15, 15),
        attrs={"kernel": 3, "stride": 2, "lhs_dilation": 2, "mode": "sum"},
    )
    assert op.cost.flops == 10_800  # 1,350 * (9 - 1) adds = 10,800
    assert op.cost.read_bytes == 6_144  # 4 * 2*3*16*16: the real input, not its dilated size
    # padding (-1, 0) crops a row: (8 - 1 - 3) // 1 + 1 = 5 rows; (8 + 2 - 3) + 1 = 8 columns
    cropped = Operation(
        "p", "pooling", ((1, 8, 8),), (1, 5, 8), attrs={"kernel": (3, 3), "stride": 1, "padding": ((-1, 0), (1, 1))}
    )
    assert cropped.cost.flops == 320  # 40 outputs * 8 comparisons = 320


def test_pooling_reads_values_selected_alongside():
    # select_and_gather_add: compare x's windows, take the value at the winner from a second input
    op = Operation("p", "pooling", ((1, 2, 4, 4), (1, 2, 4, 4)), (1, 2, 2, 2), attrs={"kernel": 2})
    assert op.cost.flops == 24  # 8 outputs * 3 comparisons = 24
    assert op.cost.read_bytes == 256  # 4 * (32 + 32) = 256
    with pytest.raises(ShapeError, match=r"a second input must have x's shape"):
        Operation("p", "pooling", ((1, 2, 4, 4), (1, 2, 4, 4)), (1, 2, 2, 2), attrs={"kernel": 2, "mode": "avg"})


def test_max_pool_backward():
    # Flax max_pool (3, 3), stride 2, SAME on (2, 16, 16, 3): padding (0, 1), pooled (16 + 1 - 3) // 2 + 1 = 8
    attrs = {"kernel": 3, "stride": 2, "padding": ((0, 1), (0, 1))}
    op = Operation("mpb", "pooling_backward", ((2, 3, 8, 8), (2, 3, 16, 16)), (2, 3, 16, 16), attrs=attrs)
    assert op.cost.flops_by_dtype == {"float32": 3_456}  # 384 gradient elements * (8 comparisons + 1 add)
    assert op.cost.read_bytes == 7_680  # 4 * (384 + 1,536) = 7,680
    assert op.cost.write_bytes == 6_144  # 4 * 1,536: the zero-initialised output is written whole
    forward = Operation("mp", "pooling", ((2, 3, 16, 16),), (2, 3, 8, 8), attrs=attrs)
    assert op.cost.flops == forward.cost.flops + 384  # the forward's comparisons, then one add per gradient
    with pytest.raises(ShapeError, match=r"grad \(2, 3, 7, 7\) is not the pooled shape of x"):
        Operation("mpb", "pooling_backward", ((2, 3, 7, 7), (2, 3, 16, 16)), (2, 3, 16, 16), attrs=attrs)
    with pytest.raises(RecordError, match=r"attrs\['mode'\]='avg'; use one of max, min"):
        Operation(
            "mpb", "pooling_backward", ((2, 3, 8, 8), (2, 3, 16, 16)), (2, 3, 16, 16), attrs={**attrs, "mode": "avg"}
        )
