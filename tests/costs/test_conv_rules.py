"""Convolution (1-D/2-D/3-D, grouped, strided, dilated, padded, transposed) and pooling.

Convention (ARCHITECTURE.md): conv = 2 · output elements · (C_in/groups) · prod(kernel), padded
taps included, as FlopCounterMode counts; transposed conv = 2 · N · prod(input spatial) · C_in ·
(C_out/groups) · prod(kernel). Output size per spatial dim: (in + pads - dilation·(k-1) - 1) //
stride + 1. The torch tests run FlopCounterMode on real tensors of the same shapes.
"""

from __future__ import annotations

import pytest

from neural_cost import Operation
from neural_cost.core.errors import ShapeError

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
