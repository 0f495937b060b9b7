"""Fourier transforms.

Convention: a complex transform of N points is 5·N·log2 N real FLOPs — the count of the
radix-2 Cooley–Tukey algorithm (N/2·log2 N butterflies, each a complex multiply, 6 FLOPs,
and two complex adds, 4), which FFTW's benchmarks (``benchFFT``, "mflops = 5 N log2(N) /
time") and most papers apply to every N, power of two or not. A multi-dimensional
transform of N = N1·N2·... points is Σ_d (N/N_d)·5·N_d·log2 N_d = 5·N·log2 N: the product
rule. A transform between real and complex values (r2c, c2r) is half: 2.5·N·log2 N, N the
real signal's length. A normalisation (1/N or 1/√N) adds one multiply per real value of the
output.

Known inaccuracy: real libraries use split-radix and mixed-radix kernels (≈ 4·N·log2 N for
powers of two; more for prime lengths, which go through Bluestein's algorithm at ~3 FFTs of
twice the length) — the convention is a yardstick, not the executed count. FLOPs are
charged to the real type of the arithmetic (complex64 → float32).
"""

from __future__ import annotations

import math
from typing import Literal

from ..core.dtypes import dtype_info
from ..core.errors import ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation
from .intmath import ceil_times_log2
from .registry import Positive, cost_rule, expect_inputs, expect_output, read_inputs, where

Transform = Literal["c2c", "r2c", "c2r"]
_REAL_PART = {"complex64": "float32", "complex128": "float64"}


def fft_flops(points: int, transform: str = "c2c") -> int:
    """5·N·log2 N for one complex transform of N points (half for r2c and c2r), rounded up,
    in exact integer arithmetic (exact, not rounded, for powers of two). 0 for N < 2."""
    if points < 2:
        return 0
    return ceil_times_log2(5 * points, 1 if transform == "c2c" else 2, points)


@cost_rule(
    "fft",
    "a transform over the signal dims attrs['lengths'] (the trailing dims of the complex input, or of the "
    "real signal for r2c/c2r: attrs['transform']): per transform of N = ∏ lengths points 5·N·log2 N (c2c) or "
    "2.5·N·log2 N (r2c, c2r), × the batch (the other elements); attrs['scaled'] + 1 per real output value",
)
def fft(op: Operation, *, lengths: tuple[Positive, ...], transform: Transform = "c2c", scaled: bool = False) -> OpCost:
    """The record's input and output are the tensors the op reads and writes (an r2c output has
    N_last//2+1 complex values in its last dim); ``lengths`` are the logical transform sizes,
    which for c2r are the real output's — the record cannot tell them from the half spectrum."""
    expect_inputs(op, 1, 1, "x")
    signal = op.output if transform == "c2r" else op.inputs[0]
    dims = len(lengths)
    if not lengths or dims > len(signal) or tuple(signal[-dims:]) != tuple(lengths):
        side = "output" if transform == "c2r" else "input"
        raise ShapeError(
            f"{where(op)} attrs['lengths']={lengths} must be the trailing dims of the {transform} transform's "
            f"{side} {signal}"
        )
    x = op.inputs[0]
    if transform == "c2c":
        expect_output(op, x, "a complex transform keeps the signal's shape")
    elif transform == "r2c" and op.output not in ((*x[:-1], x[-1] // 2 + 1), x):
        raise ShapeError(
            f"{where(op)} output={op.output} does not fit the r2c transform of {x}: expected the one-sided "
            f"{(*x[:-1], x[-1] // 2 + 1)} or the two-sided {x}"
        )
    points = math.prod(lengths)
    batch = math.prod(signal[:-dims])
    flops = batch * fft_flops(points, transform)
    if scaled:
        values = math.prod(op.output) * (2 if dtype_info(op.dtype).category == "complex" else 1)
        flops += values
    dtype = op.compute_dtype
    dtype = _REAL_PART.get(dtype, dtype)
    return OpCost({dtype: flops} if flops else {}, read_inputs(op), op.output_bytes)
