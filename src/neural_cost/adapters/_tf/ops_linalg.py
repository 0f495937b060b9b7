"""Table entries for TensorFlow's dense linear algebra and Fourier transforms.

Each builder turns one graph op into a ``decomposition`` or ``fft`` record (conventions in
``neural_cost.costs.decompositions`` and ``.spectral``): the first output is the record's
output, the others (permutations, values, vectors) its extra outputs, each written once.
Length operands (``fft_length``) are metadata, not inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.records import Operation
from .common import UnmodeledOp, const_ints
from .table import TfContext, attr, lowers


def _factor(
    op: Any, ctx: TfContext, routine: str, inputs: Sequence[Any] | None = None, **attrs: Any
) -> list[Operation]:
    outputs = list(op.outputs)
    return [
        ctx.op(op, "decomposition", inputs, outputs[0], attrs={"routine": routine, **attrs}, extra_outputs=outputs[1:])
    ]


@lowers("Cholesky")
def _cholesky(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return _factor(op, ctx, "cholesky")


@lowers("Qr")
def _qr(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """Q and R; a full (m × m) Q with ``full_matrices``."""
    return _factor(op, ctx, "qr", vectors=True, full_matrices=bool(attr(op, "full_matrices", False)))


@lowers("Svd")
def _svd(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """(s, u, v): the values, and U and V with ``compute_uv`` (full with ``full_matrices``)."""
    vectors = bool(attr(op, "compute_uv", True))
    full = vectors and bool(attr(op, "full_matrices", False))
    return _factor(op, ctx, "svd", vectors=vectors, full_matrices=full)


@lowers("SelfAdjointEigV2")
def _eigh(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return _factor(op, ctx, "eigh", vectors=bool(attr(op, "compute_v", True)))


@lowers("Eig")
def _eig(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return _factor(op, ctx, "eig", vectors=bool(attr(op, "compute_v", True)))


@lowers("MatrixTriangularSolve")
def _triangular_solve(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """(matrix, rhs): solved from the left."""
    return _factor(op, ctx, "triangular_solve")


@lowers("MatrixSolve")
def _solve(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return _factor(op, ctx, "solve")


@lowers("MatrixInverse")
def _inverse(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return _factor(op, ctx, "inverse")


@lowers("MatrixDeterminant", "LogMatrixDeterminant")
def _determinant(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return _factor(op, ctx, "det" if op.type == "MatrixDeterminant" else "slogdet")


@lowers("Lu")
def _lu(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return _factor(op, ctx, "lu")


# --- Fourier transforms -----------------------------------------------------------------------

#: op type → (signal dims, transform, scaled by 1/N: TensorFlow's inverse transforms normalise).
_FFTS: dict[str, tuple[int, str, bool]] = {
    **{f"FFT{suffix}": (n, "c2c", False) for n, suffix in ((1, ""), (2, "2D"), (3, "3D"))},
    **{f"IFFT{suffix}": (n, "c2c", True) for n, suffix in ((1, ""), (2, "2D"), (3, "3D"))},
    **{f"RFFT{suffix}": (n, "r2c", False) for n, suffix in ((1, ""), (2, "2D"), (3, "3D"))},
    **{f"IRFFT{suffix}": (n, "c2r", True) for n, suffix in ((1, ""), (2, "2D"), (3, "3D"))},
}


@lowers(*_FFTS)
def _fft(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """``fft`` over the trailing 1-3 dims. RFFT's ``fft_length`` crops or zero-pads the real
    input: the record's signal is the transformed one (the bytes of that padded signal, a small
    overcount when it pads)."""
    dims, transform, scaled = _FFTS[op.type]
    x, out = op.inputs[0], op.outputs[0]
    signal = ctx.shape(out if transform == "c2r" else x)
    if transform == "c2c":
        lengths = signal[-dims:]
    else:
        found = const_ints(op.inputs[1])
        if found is None or len(found) != dims:
            raise UnmodeledOp(f"{op.type} {op.name}: fft_length is not a constant of {dims} values")
        lengths = found
    attrs = {"lengths": tuple(lengths), "transform": transform, "scaled": scaled}
    if transform == "r2c":
        shape = (*signal[:-dims], *lengths)
        return [ctx.op(op, "fft", [x], input_shapes=[shape], input_dtypes=[ctx.dtype(x)], attrs=attrs)]
    return [ctx.op(op, "fft", [x], attrs=attrs)]
