"""The resampling, distance, Fourier, linear-algebra and callback kinds (issue 12 item 6):
closed forms derived by hand beside each assert, and the shapes each kind rejects.
Float32 = 4 bytes."""

from __future__ import annotations

from typing import Any

import pytest

from neural_cost import Operation
from neural_cost.core.errors import RecordError, ShapeError
from neural_cost.costs.decompositions import svd_flops
from neural_cost.costs.interpolate import antialias_taps, stencil_flops
from neural_cost.costs.spectral import fft_flops

F32 = "float32"

# kind: (inputs, output, valid attrs, an unknown attribute, an ill-typed one) — for test_typed_rules.
NEW_TYPED_RULES: dict[str, tuple[Any, Any, dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "interpolate": (((1, 2, 4, 4),), (1, 2, 8, 8), {"mode": "bilinear"}, {"align_corners": True}, {"mode": "cubic"}),
    "interpolate_backward": (((1, 2, 8, 8),), (1, 2, 4, 4), {"mode": "nearest"}, {"scale": 2}, {"mode": 1}),
    "grid_sample": (((1, 2, 4, 4), (1, 3, 3, 2)), (1, 2, 3, 3), {}, {"padding_mode": "zeros"}, {"mode": "area"}),
    "cdist": (((3, 4), (5, 4)), (3, 5), {}, {"compute_mode": 0}, {"p": "2"}),
    "fft": (((4, 8),), (4, 8), {"lengths": (8,)}, {"norm": "ortho"}, {"lengths": (0,)}),
    "decomposition": (((4, 4),), (4, 4), {"routine": "lu"}, {"pivot": True}, {"routine": "getrf"}),
    "callback": (((4,),), (4,), {}, {"ordered": True}, {"target": 3}),
}


def flops(op: Operation) -> int:
    return op.cost.flops


# --- interpolate ------------------------------------------------------------------------------


def test_stencil_flops_by_mode():
    assert stencil_flops(2, 1) == 3  # one lerp: 2 multiplies + 1 add
    assert stencil_flops(2, 2) == 9  # 3 lerps × 3
    assert stencil_flops(2, 3) == 21  # 7 lerps × 3
    assert stencil_flops(4, 2) == 35  # 5 weighted sums of 4 × (4 multiplies + 3 adds)
    assert stencil_flops(1, 2) == 0  # nearest copies


@pytest.mark.parametrize(
    ("mode", "x", "out", "expected"),
    [
        ("bilinear", (1, 2, 4, 4), (1, 2, 8, 8), 1_152),  # 2·64 outputs × 9 = 1,152
        ("bicubic", (1, 2, 4, 4), (1, 2, 8, 8), 4_480),  # 128 × 35 = 4,480
        ("linear", (2, 3, 5), (2, 3, 10), 180),  # 60 × 3 = 180
        ("trilinear", (1, 1, 2, 2, 2), (1, 1, 4, 4, 4), 1_344),  # 64 × 21 = 1,344
        ("nearest", (1, 2, 4, 4), (1, 2, 8, 8), 0),  # a copy
        ("area", (1, 1, 5, 5), (1, 1, 2, 2), 36),  # windows [0,3) [2,5): (3 + 3)² = 36
    ],
)
def test_interpolate_flops_per_output_element(mode, x, out, expected):
    assert flops(Operation("i", "interpolate", (x,), out, attrs={"mode": mode})) == expected


def test_interpolate_traffic():
    up = Operation("i", "interpolate", ((1, 2, 4, 4),), (1, 2, 8, 8), attrs={"mode": "bilinear"})
    assert (up.cost.read_bytes, up.cost.write_bytes) == (128, 512)  # 4·32 whole input; 4·128 output
    # nearest downscale 8 → 2 per dim touches 2·2 of 64 per channel: 4 · 2 · 4 = 32
    down = Operation("n", "interpolate", ((1, 2, 8, 8),), (1, 2, 2, 2), attrs={"mode": "nearest"})
    assert (down.cost.read_bytes, down.cost.write_bytes) == (32, 32)


def test_antialias_is_two_separable_passes_over_widened_filters():
    # 8 → 2 per dim, scale 4: bilinear support (2/2)·4 = 4, 2·4 + 1 = 9 taps (PyTorch's max_interp_size)
    assert antialias_taps(2, 8, 2) == 9
    assert antialias_taps(2, 4, 8) == 3  # upscaling keeps the support 1: 2·1 + 1
    op = Operation("aa", "interpolate", ((1, 2, 8, 8),), (1, 2, 2, 2), attrs={"mode": "bilinear", "antialias": True})
    # width pass 2 ch · 8 rows · 2 cols · (2·9 - 1) = 544; height pass 2 · 2 · 2 · 17 = 136; 680
    assert flops(op) == 680


def test_interpolate_backward_adds_each_gradient_into_its_taps():
    grad, x = (1, 2, 8, 8), (1, 2, 4, 4)
    assert flops(Operation("b", "interpolate_backward", (grad,), x, attrs={"mode": "bilinear"})) == 1_024  # 128·8
    assert flops(Operation("b", "interpolate_backward", (grad,), x, attrs={"mode": "nearest"})) == 128  # 1 add each
    assert flops(Operation("b", "interpolate_backward", (grad,), x, attrs={"mode": "bicubic"})) == 4_096  # 128·32


@pytest.mark.parametrize(
    ("x", "out", "attrs", "message"),
    [
        ((1, 2, 4, 4), (1, 3, 8, 8), {"mode": "bilinear"}, "same N, C and rank"),
        ((1, 2, 4), (1, 2, 8), {"mode": "bilinear"}, "resamples 2 spatial dims"),
        ((1, 2, 4, 4, 4), (1, 2, 8, 8, 8), {"mode": "bicubic"}, "resamples 2 spatial dims"),
        ((2, 4), (2, 8), {"mode": "nearest"}, r"\(N, C, \*spatial\)"),
        ((1, 1, 8), (1, 1, 2), {"mode": "linear", "antialias": True}, "for bilinear and bicubic"),
    ],
)
def test_interpolate_rejects_shapes_that_do_not_fit(x, out, attrs, message):
    with pytest.raises(ShapeError, match=message):
        Operation("bad", "interpolate", (x,), out, attrs=attrs)


# --- grid_sample -----------------------------------------------------------------------------


def test_grid_sample_per_point_and_per_channel():
    x, grid, out = (1, 2, 4, 4), (1, 3, 3, 2), (1, 2, 3, 3)
    # 9 points × (4·2 unnormalise + 2·2 fractions + 4·1 corner weights = 16) + 9 × 2 ch × 7 = 144 + 126
    assert flops(Operation("g", "grid_sample", (x, grid), out)) == 270
    # nearest: 9 × 8 = 72 (coordinates only; the values are copied)
    assert flops(Operation("g", "grid_sample", (x, grid), out, attrs={"mode": "nearest"})) == 72
    # bicubic: 9 × (8 + 2·26) + 9 × 2 × 35 = 540 + 630 = 1,170
    assert flops(Operation("g", "grid_sample", (x, grid), out, attrs={"mode": "bicubic"})) == 1_170
    x3, grid3, out3 = (1, 1, 2, 2, 2), (1, 2, 2, 2, 3), (1, 1, 2, 2, 2)
    # 8 points × (12 + 6 + 8·2 = 34) + 8 × 1 × (2·8 - 1 = 15) = 272 + 120 = 392
    assert flops(Operation("g3", "grid_sample", (x3, grid3), out3)) == 392
    op = Operation("g", "grid_sample", (x, grid), out)
    assert op.cost.read_bytes == 4 * (32 + 18)  # the whole input and the grid


def test_grid_sample_rejects_a_grid_that_does_not_fit():
    with pytest.raises(ShapeError, match="grid"):
        Operation("bad", "grid_sample", ((1, 2, 4, 4), (1, 3, 3, 3)), (1, 2, 3, 3))
    with pytest.raises(ShapeError, match="expected"):
        Operation("bad", "grid_sample", ((1, 2, 4, 4), (1, 3, 3, 2)), (1, 2, 3, 4))
    with pytest.raises(ShapeError, match="bicubic"):
        Operation("bad", "grid_sample", ((1, 1, 2, 2, 2), (1, 2, 2, 2, 3)), (1, 1, 2, 2, 2), attrs={"mode": "bicubic"})


# --- cdist -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "expected", "transcendentals"),
    [
        (2.0, 180, 15),  # 15 pairs × 3·4 = 180; one sqrt each
        (1.0, 165, 0),  # 15 × (3·4 - 1) = 165
        ("inf", 165, 0),
        (0.0, 165, 0),
        (3.0, 240, 75),  # 15 × 4·4 = 240; 15 × (4 + 1) powers = 75
    ],
)
def test_cdist_per_pair(p, expected, transcendentals):
    op = Operation("d", "cdist", ((3, 4), (5, 4)), (3, 5), attrs={"p": p})
    assert (op.cost.flops, op.cost.transcendentals) == (expected, transcendentals)
    assert (op.cost.read_bytes, op.cost.write_bytes) == (4 * 32, 4 * 15)


def test_cdist_rejects_mismatched_rows_and_a_negative_p():
    with pytest.raises(ShapeError, match="one M"):
        Operation("bad", "cdist", ((3, 4), (5, 3)), (3, 5))
    with pytest.raises(ShapeError, match=r"\(P, R\)"):
        Operation("bad", "cdist", ((3, 4), (5, 4)), (5, 3))
    with pytest.raises(RecordError, match=">= 0"):
        Operation("bad", "cdist", ((3, 4), (5, 4)), (3, 5), attrs={"p": -1.0})


# --- fft -------------------------------------------------------------------------------------


def test_fft_convention():
    assert fft_flops(8) == 120  # 5 · 8 · 3
    assert fft_flops(8, "r2c") == 60  # half
    assert fft_flops(1) == 0
    assert fft_flops(6) == 78  # 5 · 6 · log2 6 = 77.55, rounded up
    c2c = Operation("f", "fft", ((4, 8),), (4, 8), "complex64", attrs={"lengths": (8,)})
    assert dict(c2c.cost.flops_by_dtype) == {F32: 480}  # 4 transforms × 120, charged to the real type
    # 2-D 4×8: N = 32, 5·32·5 = 800 = Σ over dims (8 rows of 4: 8·5·4·2 = 320, 4 rows of 8: 4·120 = 480)
    two = Operation("f2", "fft", ((3, 4, 8),), (3, 4, 8), "complex64", attrs={"lengths": (4, 8)})
    assert flops(two) == 3 * 800
    r2c = Operation(
        "r", "fft", ((4, 8),), (4, 5), "complex64", input_dtypes=(F32,), attrs={"lengths": (8,), "transform": "r2c"}
    )
    assert flops(r2c) == 240  # 4 × 60
    assert (r2c.cost.read_bytes, r2c.cost.write_bytes) == (128, 160)  # 4·32 floats; 8·20 complex
    c2r = Operation(
        "i", "fft", ((4, 5),), (4, 8), F32, input_dtypes=("complex64",),
        attrs={"lengths": (8,), "transform": "c2r", "scaled": True},
    )  # fmt: skip
    assert flops(c2r) == 240 + 32  # 4 × 60, + 32 real outputs scaled by 1/N


def test_fft_lengths_must_be_the_signal_dims():
    with pytest.raises(ShapeError, match="trailing dims"):
        Operation("bad", "fft", ((4, 8),), (4, 8), "complex64", attrs={"lengths": (4,)})
    with pytest.raises(ShapeError, match="output"):
        Operation("bad", "fft", ((4, 5),), (4, 8), F32, attrs={"lengths": (5,), "transform": "c2r"})


# --- decomposition ---------------------------------------------------------------------------


def _dec(routine: str, inputs: Any, output: Any = (4, 4), **attrs: Any) -> int:
    return flops(Operation("d", "decomposition", inputs, output, attrs={"routine": routine, **attrs}))


def test_lapack_counts_square():
    n = 6
    assert _dec("lu", ((n, n),)) == 144  # 2·216/3 = 144
    assert _dec("cholesky", ((n, n),)) == 72  # 216/3
    assert _dec("qr", ((n, n),)) == 288  # 4·216/3
    assert _dec("qr", ((n, n),), vectors=True) == 576  # + orgqr 4n³ - 4n³ + 4n³/3 = 288
    assert _dec("eigh", ((n, n),)) == 288  # 4·216/3
    assert _dec("eigh", ((n, n),), vectors=True) == 1_944  # 9·216
    assert _dec("eig", ((n, n),), vectors=True) == 5_400  # 25·216
    assert _dec("inverse", ((n, n),)) == 432  # 2·216
    assert _dec("det", ((n, n),)) == 149  # 144 + 5 diagonal multiplies
    assert _dec("slogdet", ((n, n),)) == 155  # 144 + 6 logs + 5 adds
    assert _dec("triangular_solve", ((n, n), (n, 3))) == 108  # 36 · 3
    assert _dec("solve", ((n, n), (n, 3))) == 144 + 216  # LU + 2 · 36 · 3
    assert _dec("lu_solve", ((n, n), (n, 3), (n,))) == 216  # 2 · 36 · 3
    assert _dec("triangular_solve", ((n, n), (2, n)), left=False) == 72  # 36 · 2 rows


def test_lapack_counts_rectangular_and_batched():
    assert _dec("lu", ((8, 4),), (8, 4)) == 107  # mn² - n³/3 = 128 - 21.33 = 106.67, rounded up
    assert _dec("lu", ((4, 8),), (4, 8)) == 107  # the transpose's count
    assert _dec("qr", ((8, 4),), (8, 4)) == 214  # 2·8·16 - 2·64/3 = 256 - 42.67 = 213.33 → 214
    # reduced Q (8 × 4), k = 4: 4·8·4·4 - 2·12·16 + 4·64/3 = 512 - 384 + 85.33 = 213.33; 213.33 + 213.33 → 427
    assert _dec("qr", ((8, 4),), (8, 4), vectors=True) == 427
    # complete Q (8 × 8): 4·8·8·4 - 2·16·16 + 85.33 = 1024 - 512 + 85.33; + 213.33 = 810.67 → 811
    assert _dec("qr", ((8, 4),), (8, 8), vectors=True, full_matrices=True) == 811
    assert _dec("householder_product", ((8, 4), (4,)), (8, 4)) == 214  # 213.33 → 214
    assert _dec("cholesky", ((3, 6, 6),), (3, 6, 6)) == 3 * 72  # × batch
    assert _dec("svd", ((8, 4),), (4,)) == 427  # 4·8·16 - 4·64/3 = 512 - 85.33 = 426.67 → 427
    assert _dec("svd", ((8, 4),), (8, 4), vectors=True) == 2_304  # 14·8·16 + 8·64 = 1,792 + 512
    assert (
        _dec("svd", ((8, 4),), (8, 8), vectors=True, full_matrices=True) == 2_624
    )  # 4·64·4 + 8·8·16 + 9·64 = 1,024 + 1,024 + 576
    assert _dec("svd", ((4, 8),), (4,)) == 427  # the transpose's count


def test_the_issues_512_svd_is_modeled():
    # thin U, V at m = n = 512: 14n³ + 8n³ = 22 · 134,217,728 = 2,952,790,016
    assert svd_flops(512, 512, True, False) == 2_952_790_016
    op = Operation("svd", "decomposition", ((512, 512),), (512, 512), attrs={"routine": "svd", "vectors": True},
                   extra_outputs=((512,), (512, 512)))  # fmt: skip
    assert op.cost.flops == 2_952_790_016
    assert op.cost.write_bytes == 4 * (2 * 262_144 + 512)  # U, Vᵀ and the values


@pytest.mark.parametrize(
    ("routine", "inputs", "message"),
    [
        ("cholesky", ((4, 3),), "square"),
        ("lu", ((4,),), r"matrix \(\.\.\., m, n\)"),
        ("solve", ((4, 4),), "has 1 inputs"),
        ("triangular_solve", ((4, 4), (3, 2)), "does not fit A's size 4"),
        ("householder_product", ((4, 8), (4,)), "m ≥ n ≥ k"),
    ],
)
def test_decomposition_rejects_shapes_that_do_not_fit(routine, inputs, message):
    with pytest.raises(ShapeError, match=message):
        Operation("bad", "decomposition", inputs, (4, 4), attrs={"routine": routine})


# --- callback --------------------------------------------------------------------------------


def test_callback_counts_bytes_and_says_its_flops_are_unknown():
    op = Operation("cb", "callback", ((4, 4),), (4,), attrs={"target": "f"})
    assert (op.cost.flops, op.cost.read_bytes, op.cost.write_bytes) == (0, 64, 16)
    assert op.cost.notes[0].startswith("FLOPs unknown: host callback f")
    unknown = Operation("cb", "callback", ((4,),), (0,), "uint8", attrs={"results_known": False}, input_dtypes=(F32,))
    assert (unknown.cost.read_bytes, unknown.cost.write_bytes) == (16, 0)
    assert "no static shape" in unknown.cost.notes[1]
