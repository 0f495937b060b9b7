"""Interpolation, grid sampling, cdist, FFTs and dense linear algebra traced from real PyTorch
programs (issue 12 item 6): each program is 100% covered and its op's count equals the closed
form derived beside it (the conventions are in neural_cost.costs.interpolate, .distances,
.spectral and .decompositions). Float32 = 4 bytes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from neural_cost.adapters import TorchAdapter  # noqa: E402


class Program(torch.nn.Module):
    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, *args):
        return self.function(*args)


def trace_one(function, *args, kind):
    """The trace of ``function(*args)``, fully covered, and its one record of ``kind``."""
    trace = TorchAdapter().trace(Program(function), args)
    assert trace.coverage.unmodeled == ()
    assert trace.coverage.fraction == 1.0
    (record,) = [op for op in trace.operations if op.kind == kind]
    return record


IMAGE = torch.randn(1, 2, 4, 4)


@pytest.mark.parametrize(
    ("mode", "flops", "read"),
    [
        ("bilinear", 1_152, 128),  # 2·64 outputs × 9 (3 lerps of 3); the whole input, 4·32
        ("bicubic", 4_480, 128),  # 128 × 35 (5 sums of 4 taps, 7 each)
        ("nearest", 0, 128),  # a copy; every source index hit once when upscaling: 4·2·16
        ("nearest-exact", 0, 128),
    ],
)
def test_interpolate(mode, flops, read):
    op = trace_one(lambda x: F.interpolate(x, scale_factor=2, mode=mode), IMAGE, kind="interpolate")
    assert (op.cost.flops, op.cost.read_bytes, op.cost.write_bytes) == (flops, read, 512)  # 4·128 written


def test_interpolate_linear_trilinear_and_antialias():
    line = trace_one(
        lambda x: F.interpolate(x, scale_factor=2, mode="linear"), torch.randn(2, 3, 5), kind="interpolate"
    )
    assert line.cost.flops == 180  # 60 outputs × 3
    cube = torch.randn(1, 1, 2, 2, 2)
    tri = trace_one(lambda x: F.interpolate(x, scale_factor=2, mode="trilinear"), cube, kind="interpolate")
    assert tri.cost.flops == 1_344  # 64 × 21
    big = torch.randn(1, 2, 8, 8)
    aa = trace_one(lambda x: F.interpolate(x, size=(2, 2), mode="bilinear", antialias=True), big, kind="interpolate")
    assert aa.cost.flops == 680  # 9 taps: 2·8·2·17 + 2·2·2·17 = 544 + 136


def test_interpolate_backward():
    x = IMAGE.clone().requires_grad_(True)
    trace = TorchAdapter().trace(
        Program(lambda t: F.interpolate(t, scale_factor=2, mode="bilinear")), (x,), training=True
    )
    assert trace.coverage.unmodeled == ()
    (op,) = [o for o in trace.operations if o.kind == "interpolate_backward"]
    assert op.cost.flops == 1_024  # 128 gradients × 2·4 taps


def test_grid_sample():
    grid = torch.zeros(1, 3, 3, 2)
    op = trace_one(lambda x, g: F.grid_sample(x, g, align_corners=False), IMAGE, grid, kind="grid_sample")
    assert op.cost.flops == 270  # 9 points × 16 + 9 × 2 channels × 7
    assert op.cost.read_bytes == 200  # 4 · (32 + 18): the input and the grid


def test_cdist_direct_and_matmul_paths():
    op = trace_one(lambda a, b: torch.cdist(a, b), torch.randn(3, 4), torch.randn(5, 4), kind="cdist")
    assert op.cost.flops == 180  # 15 pairs × 3·4
    l1 = trace_one(lambda a, b: torch.cdist(a, b, p=1), torch.randn(3, 4), torch.randn(5, 4), kind="cdist")
    assert l1.cost.flops == 165  # 15 × (3·4 - 1)
    # more than 25 rows: ATen's matmul path, each of its steps a record
    trace = TorchAdapter().trace(Program(lambda a, b: torch.cdist(a, b)), (torch.randn(30, 4), torch.randn(30, 4)))
    assert trace.coverage.unmodeled == ()
    by_name = {op.name: op.cost.flops for op in trace.operations}
    assert by_name["_euclidean_dist.mm"] == 2 * 30 * 6 * 30  # (30, M+2) @ (M+2, 30): 10,800
    assert by_name["_euclidean_dist.x1_norm"] == 30 * 7  # M squares + M-1 adds per row
    assert by_name["_euclidean_dist.sqrt"] == 2 * 900  # clamp and sqrt per distance


def test_fft():
    rfft = trace_one(lambda x: torch.fft.rfft(x), torch.randn(4, 8), kind="fft")
    assert rfft.cost.flops == 240  # 4 transforms × 2.5·8·3
    assert (rfft.cost.read_bytes, rfft.cost.write_bytes) == (128, 160)  # 4·32 floats in, 8·20 complex out
    fft2 = trace_one(lambda x: torch.fft.fft2(x), torch.randn(3, 4, 8, dtype=torch.complex64), kind="fft")
    assert fft2.cost.flops == 2_400  # 3 × 5·32·log2 32 = 3 × 800
    assert dict(fft2.cost.flops_by_dtype) == {"float32": 2_400}
    ifft = trace_one(lambda x: torch.fft.ifft(x, dim=0), torch.randn(8, 4, dtype=torch.complex64), kind="fft")
    assert ifft.cost.flops == 4 * 120 + 2 * 32  # 4 transforms along dim 0; 1/N on 32 complex outputs
    irfft = trace_one(lambda x: torch.fft.irfft(x), torch.randn(4, 5, dtype=torch.complex64), kind="fft")
    assert irfft.cost.flops == 240 + 32  # 4 × 60 to 8 real values; 1/N on 32 outputs


A = torch.randn(6, 6)
SPD = A @ A.mT + 6 * torch.eye(6)


@pytest.mark.parametrize(
    ("name", "function", "args", "flops"),
    [
        ("svd", torch.linalg.svd, (torch.randn(8, 4),), 2_624),  # full U: 4·64·4 + 8·8·16 + 9·64
        ("svd thin", lambda x: torch.linalg.svd(x, full_matrices=False), (torch.randn(8, 4),), 2_304),  # 14mn² + 8n³
        # svdvals and eigvalsh compute the vectors whenever autograd might need them, and under a
        # dispatch mode (the tracer's) PyTorch assumes it might: the count follows what ran
        ("svdvals", torch.linalg.svdvals, (torch.randn(8, 4),), 2_304),  # thin U, V: 14mn² + 8n³
        ("svd values", lambda x: torch.ops.aten._linalg_svd(x, False, False), (torch.randn(8, 4),), 427),  # 426.67
        ("qr", torch.linalg.qr, (torch.randn(8, 4),), 427),  # geqrf 213.33 + orgqr 213.33
        ("eigh", torch.linalg.eigh, (SPD,), 1_944),  # 9n³
        ("eigvalsh", torch.linalg.eigvalsh, (SPD,), 1_944),  # with vectors, 9n³ (see svdvals)
        ("cholesky", torch.linalg.cholesky, (SPD,), 72),  # n³/3
        ("lu", torch.linalg.lu, (A,), 144),  # 2n³/3
        ("lu_factor", torch.linalg.lu_factor, (A,), 144),
        ("solve", torch.linalg.solve, (A, torch.randn(6, 3)), 360),  # 144 + 2·36·3
        ("inv", torch.linalg.inv, (A,), 432),  # 2n³
        ("det", torch.linalg.det, (A,), 149),  # LU + 5 multiplies
        ("slogdet", torch.linalg.slogdet, (A,), 155),  # LU + 6 logs + 5 adds
        ("solve_triangular", lambda a, b: torch.linalg.solve_triangular(a, b, upper=True), (A, torch.randn(6, 3)), 108),
        ("eig", torch.linalg.eig, (A,), 5_400),  # 25n³
    ],
)
def test_linear_algebra(name, function, args, flops):
    op = trace_one(function, *args, kind="decomposition")
    assert op.cost.flops == flops


def test_cholesky_program_with_eye_and_error_check():
    # eye is a fill (0 FLOPs, its 36 values written); _linalg_check_errors is free
    trace = TorchAdapter().trace(Program(lambda a: torch.linalg.cholesky(a @ a.mT + torch.eye(6))), (A,))
    assert trace.coverage.unmodeled == ()
    (eye,) = [op for op in trace.operations if op.name == "eye"]
    assert (eye.cost.flops, eye.cost.read_bytes, eye.cost.write_bytes) == (0, 0, 144)
    lu = TorchAdapter().trace(Program(torch.linalg.lu_factor), (A,))
    assert lu.coverage.free >= 1 and lu.coverage.unmodeled == ()  # _linalg_check_errors


def test_the_issues_512_svd_is_modeled():
    op = trace_one(torch.linalg.svd, torch.randn(512, 512), kind="decomposition")
    assert op.cost.flops == 21 * 512**3  # 4n³ + 8n³ + 9n³ = 2,818,572,288
