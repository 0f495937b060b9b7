"""Table entries for PyTorch's dense linear algebra, Fourier transforms and pairwise distances.

Each builder turns one executed aten call into a ``decomposition``, ``fft`` or ``cdist``
record (conventions in ``neural_cost.costs.decompositions``, ``.spectral`` and ``.distances``):
the first result is the record's output, the others (pivots, info, values, vectors) its
extra outputs, each written once. ``_linalg_check_errors`` is free: it only reads the info
codes a LAPACK call returned, to raise an error when one is set.
"""

from __future__ import annotations

import math
from typing import Any

from .common import Ops, _arguments, _record, _spec
from .table import AtenCall, TorchContext, free, lowers

free(
    "reads the info codes a factorization returned (one int per matrix) to raise an error; no arithmetic",
    "_linalg_check_errors",
)


def _factor(call: AtenCall, ctx: TorchContext, routine: str, inputs: list[Any], **attrs: Any) -> Ops:
    outputs = call.outputs
    return [
        ctx.op(
            call, "decomposition", inputs, outputs[0], attrs={"routine": routine, **attrs}, extra_outputs=outputs[1:]
        )
    ]


@lowers("linalg_lu_factor_ex", "linalg_lu", "lu_unpack")
def _lu(call: AtenCall, ctx: TorchContext) -> Ops:
    """getrf on A (m × n): LU and pivots (linalg_lu also unpacks P, L, U — written, not counted
    as arithmetic). lu_unpack only unpacks factors: a ``copy``."""
    if call.name == "lu_unpack":
        return [ctx.op(call, "copy", [call.args[0]], call.outputs[0], extra_outputs=call.outputs[1:])]
    return _factor(call, ctx, "lu", [call.args[0]])


@lowers("linalg_cholesky_ex")
def _cholesky(call: AtenCall, ctx: TorchContext) -> Ops:
    return _factor(call, ctx, "cholesky", [call.args[0]])


@lowers("linalg_qr")
def _qr(call: AtenCall, ctx: TorchContext) -> Ops:
    """mode 'reduced' forms a reduced Q, 'complete' a full one, 'r' none (Q is an empty tensor)."""
    mode = str(_arguments(call)["mode"])
    return _factor(call, ctx, "qr", [call.args[0]], vectors=mode != "r", full_matrices=mode == "complete")


@lowers("geqrf")
def _geqrf(call: AtenCall, ctx: TorchContext) -> Ops:
    return _factor(call, ctx, "qr", [call.args[0]])


@lowers("linalg_householder_product")
def _householder(call: AtenCall, ctx: TorchContext) -> Ops:
    return _factor(call, ctx, "householder_product", list(call.args[:2]))


@lowers("_linalg_svd")
def _svd(call: AtenCall, ctx: TorchContext) -> Ops:
    """(A, full_matrices, compute_uv) → (U, S, Vh). Whether vectors were computed is read from U
    (empty when not): svdvals and eigvalsh compute them whenever autograd might need them."""
    a = _arguments(call)
    vectors, full = call.outputs[0].numel() > 0, bool(a["full_matrices"])
    return _factor(call, ctx, "svd", [a["A"]], vectors=vectors, full_matrices=vectors and full)


@lowers("_linalg_eigh")
def _eigh(call: AtenCall, ctx: TorchContext) -> Ops:
    """(A, UPLO, compute_v) → (values, vectors); the vectors are empty when not computed."""
    return _factor(call, ctx, "eigh", [call.args[0]], vectors=call.outputs[1].numel() > 0)


@lowers("linalg_eig", "linalg_eigvals")
def _eig(call: AtenCall, ctx: TorchContext) -> Ops:
    return _factor(call, ctx, "eig", [call.args[0]], vectors=call.name == "linalg_eig")


@lowers("linalg_solve_triangular", "triangular_solve")
def _triangular_solve(call: AtenCall, ctx: TorchContext) -> Ops:
    """linalg_solve_triangular(A, B, upper, left); the older triangular_solve(B, A, ...) solves
    from the left."""
    if call.name == "triangular_solve":
        return _factor(call, ctx, "triangular_solve", [call.args[1], call.args[0]])
    left = bool(_arguments(call)["left"])
    return _factor(call, ctx, "triangular_solve", list(call.args[:2]), left=left)


@lowers("_linalg_solve_ex")
def _solve(call: AtenCall, ctx: TorchContext) -> Ops:
    """(A, B, left): getrf then two triangular solves; the result, LU, pivots and info written."""
    a = _arguments(call)
    return _factor(call, ctx, "solve", [a["A"], a["B"]], left=bool(a["left"]))


@lowers("linalg_lu_solve")
def _lu_solve(call: AtenCall, ctx: TorchContext) -> Ops:
    a = _arguments(call)
    return _factor(call, ctx, "lu_solve", [a["LU"], a["B"], a["pivots"]], left=bool(a["left"]))


@lowers("linalg_inv_ex")
def _inverse(call: AtenCall, ctx: TorchContext) -> Ops:
    return _factor(call, ctx, "inverse", [call.args[0]])


@lowers("_linalg_det", "_linalg_slogdet")
def _determinant(call: AtenCall, ctx: TorchContext) -> Ops:
    return _factor(call, ctx, "det" if call.name == "_linalg_det" else "slogdet", [call.args[0]])


# --- Fourier transforms -----------------------------------------------------------------------


def _trailing(shape: tuple[int, ...], dims: list[int]) -> tuple[int, ...]:
    """``shape`` with ``dims`` moved last, in order: the rule reads the transform's lengths there."""
    kept = [size for axis, size in enumerate(shape) if axis not in dims]
    return (*kept, *(shape[d] for d in dims))


@lowers("_fft_c2c", "_fft_r2c", "_fft_c2r")
def _fft(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, dim, normalization, ...): ``fft`` over ``dim``, the signal's dims moved last in the
    record (a relabelling: the element counts are the same); normalization 1 (1/√n) or 2 (1/n)
    scales the output. The c2r signal is the real output (its lengths ``last_dim_size``)."""
    x, out = call.args[0], call.out
    transform = call.name[-3:]
    signal = out if transform == "c2r" else x
    dims = sorted(int(d) % signal.dim() for d in call.args[1])
    in_shape, out_shape = _trailing(ctx.shape(x), dims), _trailing(ctx.shape(out), dims)
    lengths = tuple(int(signal.shape[d]) for d in dims)
    attrs = {"lengths": lengths, "transform": transform, "scaled": int(call.args[2]) != 0}
    return [_record(ctx, call.name, "fft", [(in_shape, ctx.dtype(x))], (out_shape, ctx.dtype(out)), attrs=attrs)]


# --- pairwise distances -----------------------------------------------------------------------


@lowers("_cdist_forward")
def _cdist(call: AtenCall, ctx: TorchContext) -> Ops:
    """(x1, x2, p, compute_mode): ``cdist``, every pair computed directly."""
    p = float(call.args[2])
    return [ctx.op(call, "cdist", list(call.args[:2]), call.out, attrs={"p": "inf" if math.isinf(p) else p})]


@lowers("_euclidean_dist")
def _euclidean(call: AtenCall, ctx: TorchContext) -> Ops:
    """(x1 (..., P, M), x2 (..., R, M)): cdist's matmul path for p = 2, as ATen evaluates it —
    squared row norms (a ``reduce`` of M squares and M-1 adds per row), x1·(-2), both sides
    padded with their norms and ones (``copy``), one ``matmul`` over M+2, then clamp and sqrt
    per distance (2 FLOPs, 1 transcendental)."""
    x1, x2 = call.args[:2]
    (s1, d1), (s2, d2), out = _spec(ctx, x1), _spec(ctx, x2), _spec(ctx, call.out)
    width = s1[-1]
    records = []
    for side, (shape, dtype) in (("x1", (s1, d1)), ("x2", (s2, d2))):
        rows = (shape[:-1], dtype)
        records.append(
            _record(
                ctx, f"{call.name}.{side}_norm", "reduce", [(shape, dtype)], rows,
                attrs={"axes": (len(shape) - 1,), "flops_per_output": width},
            )
        )  # fmt: skip
        padded = ((*shape[:-1], width + 2), dtype)
        records.append(_record(ctx, f"{call.name}.{side}_pad", "copy", [(shape, dtype), rows, rows], padded))
    records.append(_record(ctx, f"{call.name}.scale", "elementwise", [(s1, d1)], (s1, d1), attrs={"op": "mul"}))
    lhs, rhs = ((*s1[:-1], width + 2), d1), ((*s2[:-2], width + 2, s2[-2]), d2)
    records.append(_record(ctx, f"{call.name}.mm", "matmul", [lhs, rhs], out))
    records.append(
        _record(
            ctx, f"{call.name}.sqrt", "elementwise", [out], out,
            attrs={"flops_per_element": 2, "transcendentals_per_element": 1},
        )
    )  # fmt: skip
    return records
